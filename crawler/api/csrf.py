"""Requests that change state come from the dashboard's own pages or from programs, never from
another site's page: pure decisions on request headers, no I/O.

SameSite=Strict keeps the session cookie from other sites, but not from pages of the same site
(another port of the same host, a sibling subdomain). Browsers say where a request comes from
(``Sec-Fetch-Site``, else ``Origin``) and a page cannot forge either; programs such as curl send
neither and are let through. Bodies must be JSON: a form or a ``no-cors`` fetch can send only
the CORS-safelisted types (a form's, ``text/plain``) or a body with no type, while JSON from
another origin needs a CORS preflight, which this server never grants.
"""

from __future__ import annotations

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_DEFAULT_PORTS = {"http": "80", "https": "443"}
_SAME_ORIGIN = frozenset({"same-origin", "none"})
"""``Sec-Fetch-Site`` of the dashboard's own requests, and of what the user typed or bookmarked."""


def origin(scheme: str, host: str) -> str:
    """``scheme://host[:port]`` as browsers write ``Origin``: lowercase, no default port."""
    scheme, host = scheme.lower(), host.lower()
    name, _, port = host.rpartition(":")  # "[::1]" has no port: its last part ends with "]"
    return f"{scheme}://{name if port == _DEFAULT_PORTS.get(scheme) else host}"


def cross_site(fetch_site: str | None, request_origin: str | None, own_origin: str) -> str | None:
    """Why a state change is refused as coming from another page, or None."""
    if fetch_site is not None:
        if fetch_site.strip().lower() in _SAME_ORIGIN:
            return None
        return f"refused: a request from another site or origin (Sec-Fetch-Site: {fetch_site[:40]})"
    if request_origin is None:
        return None  # not a browser (curl, a script): no page can make a browser send no Origin on a POST
    scheme, sep, host = request_origin.strip().partition("://")
    if sep and origin(scheme, host) == own_origin:
        return None
    return f"refused: a request from another origin ({request_origin[:100]})"


def unsafe_body(content_type: str | None, has_body: bool) -> str | None:
    """Why a state change's body is refused (it must be JSON, or absent), or None."""
    if content_type is not None:
        media = content_type.partition(";")[0].strip().lower()
        return None if media == "application/json" else f"send JSON (Content-Type: application/json), not {media!r}"
    return "a body needs Content-Type: application/json" if has_body else None

"""Headers on every answer of ``scrapy serve``, the dashboard's files, JSON and errors alike."""

from __future__ import annotations

from aiohttp import web

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
"""The dashboard's own files only: no inline script or style, no other site, never in a frame."""
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",  # frame-ancestors for browsers without CSP level 2
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
}
SERVER = "crawler"
"""Instead of aiohttp's ``Python/3.x aiohttp/3.x``: versions help whoever looks for a known flaw."""


async def add_security_headers(request: web.Request, response: web.StreamResponse) -> None:
    response.headers.update(SECURITY_HEADERS)
    response.headers["Server"] = SERVER
    # Answers may carry what a session may read: no cache keeps them. The dashboard's files set
    # their own (revalidated each time).
    response.headers.setdefault("Cache-Control", "no-store")

"""The normal form of a URL: the URL as a browser reads it (``whatwg``), then w3lib's
``canonicalize_url``.

The browser's reading resolves what is ambiguous (backslashes, IDNA, IPv4 written as numbers)
and refuses what a browser refuses. w3lib then drops the fragment, sorts the query and
normalises percent-escapes. What neither does, and this module adds: drop tracking parameters,
drop a host's trailing dot, and refuse what is not a fetchable http(s) URL.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from fnmatch import translate
from urllib.parse import urlsplit, urlunsplit

from w3lib.url import canonicalize_url

from crawler.identity.whatwg import parse

# ``ref`` and ``source`` (listed by some tracking-parameter lists) are left out on purpose:
# on many sites they select content (a Git branch, a data source), so removing them would
# merge distinct pages.
DEFAULT_TRACKING_PARAMS: tuple[str, ...] = (
    "utm_*",
    "gclid",
    "gclsrc",
    "dclid",
    "fbclid",
    "msclkid",
    "yclid",
    "mc_cid",
    "mc_eid",
    "_ga",
    "_gl",
    "igshid",
)

SUPPORTED_SCHEMES = frozenset({"http", "https"})
DEFAULT_PORTS = {"http": 80, "https": 443}
_VALID_HOST = re.compile(r"^(?:[a-z0-9_](?:[a-z0-9_-]{0,62})\.?)+$|^\[[0-9a-f:.]+\]$")
_MAX_URL_LENGTH = 8192
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_PLAIN_URL = re.compile(
    r"(https?)://([a-z0-9_.-]+)(?::([1-9][0-9]{0,4}))?(/[A-Za-z0-9._~/-]*)?(?:\?([A-Za-z0-9._~!$'()*,;:@/?=&-]+))?\Z"
)
_ESCAPED_IN_QUERY = re.compile(r"[^A-Za-z0-9._~-]")
"""What w3lib percent-encodes in a query's names and values (its always-safe bytes are kept)."""
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_DOTTED_QUAD = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}\Z")
"""An IPv4 address as a browser writes it: four decimal numbers, none with a leading zero."""


class InvalidURL(ValueError):
    """The input is not a fetchable http(s) URL; the message says why."""


class UrlNormalizer:
    """Normalizes URLs with one set of tracking parameters; remembers recent answers,
    because pages of one site repeat the same links many times."""

    def __init__(self, tracking_params: Iterable[str] = DEFAULT_TRACKING_PARAMS, cache_size: int = 200_000):
        patterns = tuple(p.lower() for p in tracking_params)
        self._exact = frozenset(p for p in patterns if not _is_wildcard(p))
        wildcards = [translate(p) for p in patterns if _is_wildcard(p)]
        self._wildcards = re.compile("|".join(wildcards)) if wildcards else None
        self._cache: dict[str, str] = {}
        self._cache_size = cache_size

    def __call__(self, url: str) -> str:
        cached = self._cache.get(url)
        if cached is not None:
            return cached
        normal = self.normalize(url)
        if len(self._cache) >= self._cache_size:
            self._cache.clear()
        self._cache[url] = normal
        return normal

    def normalize(self, url: str) -> str:
        url = url.strip()
        if not url:
            raise InvalidURL("empty URL")
        if len(url) > _MAX_URL_LENGTH:
            raise InvalidURL(f"URL longer than {_MAX_URL_LENGTH} characters")
        return self._plain_normal(url) or self.canonicalize(url)

    def canonicalize(self, url: str) -> str:
        """The normal form of a stripped URL of acceptable length, through the browser's reading
        and w3lib."""
        standard = parse(url)
        if standard is None:
            raise InvalidURL("not a valid URL" if _SCHEME.match(url) else "no scheme")
        scheme = standard.partition(":")[0]
        if scheme not in SUPPORTED_SCHEMES:
            raise InvalidURL(f"unsupported scheme {scheme!r}")
        try:
            canonical = canonicalize_url(standard, keep_fragments=False)
            parts = urlsplit(canonical)
            port = parts.port
        except (ValueError, UnicodeError) as exc:
            raise InvalidURL(f"unparsable URL: {exc}") from None
        host = parts.hostname or ""
        # One trailing dot names the root (example.com. is example.com); a second is an empty
        # label, which no DNS name has.
        host = host.removesuffix(".")
        if ":" in host:
            host = f"[{host}]"
        if not host or host.endswith(".") or not _VALID_HOST.match(host):
            raise InvalidURL(f"invalid host {parts.hostname!r}")
        netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
        if parts.username or parts.password:
            userinfo = parts.netloc.rpartition("@")[0]
            netloc = f"{userinfo}@{netloc}"
        query = self._drop_tracking(parts.query) if parts.query else ""
        return urlunsplit((scheme, netloc, parts.path or "/", query, ""))

    def _drop_tracking(self, query: str) -> str:
        kept = [pair for pair in query.split("&") if not self._is_tracking(pair.partition("=")[0])]
        return "&".join(kept)

    def _is_tracking(self, name: str) -> bool:
        name = name.lower()
        return name in self._exact or (self._wildcards is not None and self._wildcards.match(name) is not None)

    def _plain_normal(self, url: str) -> str | None:
        """The normal form of a plain URL, without the full way (the costliest step of a link):
        ``url`` itself (with ``/`` for an empty path) when it is already in normal form, as most
        links are, or with its query in normal form. Plain is: lowercase http(s) and host, no
        default port, no user or fragment, a path of unreserved characters without dot segments;
        a host a browser keeps as it is: not IDNA (``xn--``), and its last label not a number,
        which would make it an IPv4 address, unless it is one written as a browser writes it;
        and a query of ``name=value`` pairs without ``%`` or ``+``, whose characters a browser
        keeps as they are. Anything else takes the full way."""
        plain = _PLAIN_URL.match(url)
        if plain is None:
            return None
        scheme, host, port, path, query = plain.groups()
        if not _plain_origin_and_path(scheme, host, port, path):
            return None
        if query is None:
            return url if path is not None else f"{url}/"
        query = _normal_query(query)
        if query is None:
            return None
        query = self._drop_tracking(query)
        start = url[: plain.start(5) - 1] + ("" if path is not None else "/")
        return f"{start}?{query}" if query else start


def _plain_origin_and_path(scheme: str, host: str, port: str | None, path: str | None) -> bool:
    if host.endswith(".") or not _VALID_HOST.match(host) or "xn--" in host:
        return False
    if host[host.rfind(".") + 1].isdigit() and not _DOTTED_QUAD.match(host):
        return False
    if port is not None and (int(port) > 65535 or int(port) == DEFAULT_PORTS[scheme]):
        return False
    return path is None or "/." not in path or all(segment not in (".", "..") for segment in path.split("/"))


def _normal_query(query: str) -> str | None:
    """A query without ``%`` or ``+`` as w3lib writes it: its pairs sorted, each character but
    the always-safe ones percent-encoded; None where a pair has no name or no ``=``."""
    pairs = []
    for field in query.split("&"):
        name, equals, value = field.partition("=")
        if not name or not equals:
            return None
        pairs.append((name, value))
    pairs.sort()
    return "&".join(f"{_escaped_in_query(name)}={_escaped_in_query(value)}" for name, value in pairs)


def _escaped_in_query(text: str) -> str:
    return _ESCAPED_IN_QUERY.sub(lambda character: f"%{ord(character.group()):02X}", text)


def _is_wildcard(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


_default_normalizer = UrlNormalizer()


def normalize_url(url: str) -> str:
    """The normal form of ``url`` with the default tracking parameters; raises InvalidURL."""
    return _default_normalizer(url)


def url_hash(normal_url: str) -> str:
    """SHA-256 (hex) of a URL already in normal form: the row key of a page."""
    return hashlib.sha256(normal_url.encode("utf-8")).hexdigest()

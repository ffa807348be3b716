"""A request and the response it got, as plain data: what the WARC records of a fetch are made
of, taken on the reactor so that the writer thread never touches Scrapy's objects.

Scrapy keeps header names as it normalises them (``Etag``, ``Www-Authenticate``), values as
received, one name's values together, in the order each name first came. Twisted's HTTP/1.1
client keeps the connection's own headers to itself (``Content-Length``, ``Transfer-Encoding``,
``Connection``, ``Keep-Alive``…), so a response has none of them, and its body comes without the
chunked transfer coding (content codings such as gzip stay). The status line's version is
``response.protocol``; its reason phrase is the standard one for the status.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlunparse

from scrapy import Request
from scrapy.http import Response
from scrapy.http.headers import Headers
from scrapy.utils.httpobj import urlparse_cached

TRUNCATIONS = {"download_stopped": "length", "dataloss": "disconnect"}
"""Scrapy's flags of a response whose body is not whole, and the ``WARC-Truncated`` reason of each
(the robots.txt fetch stops at 500 KiB)."""

UNARCHIVED_REQUEST_HEADERS = frozenset({"Proxy-Authorization"})
"""Sent, not archived: proxy credentials stay the operator's."""


@dataclass(frozen=True, slots=True)
class Exchange:
    url: str
    method: str
    target: str
    """The request target as sent: path, parameters and query."""
    request_headers: list[tuple[str, str]]
    request_body: bytes
    protocol: str
    """``HTTP/1.1``, ``HTTP/1.0`` or ``HTTP/2``."""
    status: int
    response_headers: list[tuple[str, str]]
    payload: bytes
    """The body as received: transfer coding removed, content coding kept."""
    date: datetime
    ip_address: str | None = None
    truncated: str | None = None
    """``WARC-Truncated``: why the payload is not whole, if it is not."""
    stored_digest: str | None = None
    """The payload digest of the copy a re-crawl already has."""


def captured(request: Request, response: Response, date: datetime, stored_digest: str | None = None) -> Exchange:
    """The exchange of ``request`` and its ``response``, received at ``date``."""
    url = urlparse_cached(request)
    truncated = next((TRUNCATIONS[flag] for flag in response.flags if flag in TRUNCATIONS), None)
    return Exchange(
        url=response.url,
        method=request.method,
        target=urlunparse(("", "", url.path or "/", url.params, url.query, "")),
        # The HTTP client adds Host after the request's own headers.
        request_headers=[*_pairs(request.headers, UNARCHIVED_REQUEST_HEADERS), ("Host", url.netloc.rpartition("@")[2])],
        request_body=request.body,
        protocol=status_line_protocol(response.protocol),
        status=response.status,
        response_headers=_pairs(response.headers),
        payload=response.body,
        date=date,
        ip_address=str(response.ip_address) if response.ip_address is not None else None,
        truncated=truncated,
        stored_digest=stored_digest,
    )


def status_line_protocol(protocol: str | None) -> str:
    """The version of a status line for Scrapy's ``response.protocol`` (``h2`` for HTTP/2, which
    has no status line of its own)."""
    if protocol == "h2":
        return "HTTP/2"
    return protocol if protocol and protocol.startswith("HTTP/") else "HTTP/1.1"


def _pairs(headers: Headers, left_out: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    # Latin-1 both ways: the bytes as received, whatever they are.
    return [
        (name, value.decode("latin-1"))
        for raw, values in headers.items()
        if (name := raw.decode("latin-1")) not in left_out
        for value in values
    ]

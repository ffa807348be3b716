"""Bounds on a response's header section, which ``DOWNLOAD_MAXSIZE`` does not count: a server
sending header lines without end would otherwise grow the process without limit.

Twisted's parser caps each line at 16 KiB but keeps every line; this parser counts them and gives
up past the limits, which ends the connection with ``HeadersTooLarge`` as the reason. Built on
Scrapy's lenient parser, protocol and factory (``crawler.compat``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IAddress

from crawler.compat import (
    STATUS,
    LenientHTTP11ClientFactory,
    LenientHTTP11ClientProtocol,
    LenientHTTPClientParser,
    quiescent_callback,
    rebind_parser,
)


@dataclass(frozen=True, slots=True)
class HeaderLimits:
    max_bytes: int
    """Bytes of the header section, line ends included (0: no limit)."""
    max_lines: int
    """Header lines (0: no limit)."""


class HeadersTooLarge(Exception):
    """A response whose header section passed the limits; the message says which."""


class BoundedHTTPClientParser(LenientHTTPClientParser):
    # Set by the protocol: the parser is made by Twisted and its class replaced afterwards.
    limits: HeaderLimits
    header_bytes: int
    header_lines: int

    def lineReceived(self, line: bytes) -> None:
        if self.state != STATUS:
            self.header_bytes += len(line) + 1
            self.header_lines += 1
            limits = self.limits
            if limits.max_bytes and self.header_bytes > limits.max_bytes:
                raise HeadersTooLarge(f"response headers larger than {limits.max_bytes} bytes")
            if limits.max_lines and self.header_lines > limits.max_lines:
                raise HeadersTooLarge(f"more than {limits.max_lines} response header lines")
        super().lineReceived(line)


class BoundedHTTP11ClientProtocol(LenientHTTP11ClientProtocol):
    def __init__(self, quiescentCallback: Any, limits: HeaderLimits):
        super().__init__(quiescentCallback)
        self.limits = limits

    def request(self, request: Any) -> Deferred[Any]:
        d = super().request(request)
        parser = rebind_parser(self, BoundedHTTPClientParser)
        if parser is not None:
            parser.limits, parser.header_bytes, parser.header_lines = self.limits, 0, 0
        return d


class BoundedHTTP11ClientFactory(LenientHTTP11ClientFactory):
    def __init__(self, quiescentCallback: Any, metadata: Any, limits: HeaderLimits):
        super().__init__(quiescentCallback, metadata)
        self.limits = limits

    def buildProtocol(self, addr: IAddress | None) -> BoundedHTTP11ClientProtocol:
        return BoundedHTTP11ClientProtocol(quiescent_callback(self), self.limits)

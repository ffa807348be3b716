"""Every use of a private part of Scrapy, Twisted or Protego, in one place.

Each is a name its authors may change in any release, with no deprecation. ``tests/test_compat.py``
checks every one against the installed versions (pinned in ``requirements.txt``): an upgrade that
moves one fails there, by name, rather than somewhere inside a crawl.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from protego import Protego
from protego._utils import _quote_path
from scrapy.commands import BaseRunSpiderCommand
from scrapy.core.downloader.handlers.http11 import (
    _LenientHTTP11ClientFactory,
    _LenientHTTP11ClientProtocol,
    _LenientHTTPClientParser,
)
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.downloadermiddlewares.redirect import BaseRedirectMiddleware, MetaRefreshMiddleware
from scrapy.downloadermiddlewares.retry import RetryMiddleware
from scrapy.http import Request
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils._compression import _DecompressionMaxSizeExceeded
from twisted.web._newclient import STATUS, BadHeaders, ParseError, ResponseNeverReceived

__all__ = [
    "STATUS",
    "BadHeaders",
    "DecompressionMaxSizeExceeded",
    "LenientHTTP11ClientFactory",
    "LenientHTTP11ClientProtocol",
    "LenientHTTPClientParser",
    "ParseError",
    "ResponseNeverReceived",
]

# --- Scrapy's engine -----------------------------------------------------------------------------


def schedule_engine(crawler: Crawler) -> None:
    """Have the engine ask the scheduler for requests now: its own scheduling call, which Scrapy
    makes only after a response and every 5 s (``ExecutionEngine._slot.nextcall``)."""
    engine = crawler.engine
    if engine is not None and engine._slot is not None:
        engine._slot.nextcall.schedule()


def engine_closing(crawler: Crawler) -> bool:
    """Whether the engine is closing the spider (or has closed it): Scrapy waits for every
    download in progress before it ends (``ExecutionEngine._slot.closing``)."""
    engine = crawler.engine
    return engine is not None and (engine._slot is None or engine._slot.closing is not None)


# --- Scrapy's stats collector --------------------------------------------------------------------


class PlainMemoryStatsCollector(MemoryStatsCollector):
    """Scrapy's in-memory stats (``STATS_CLASS``), read without the ``__getattribute__`` of
    Scrapy's ``StatsCollector``, which runs on every attribute read of the collector only to wrap
    its methods in a deprecation check of their ``spider`` argument (ignored here, as Scrapy
    ignores it): a crawl reads its stats dozens of times a page."""

    __getattribute__ = object.__getattribute__


# --- Scrapy's HTTP/1.1 download handler, and Twisted's HTTP client under it ------------------------

LenientHTTP11ClientFactory = _LenientHTTP11ClientFactory
LenientHTTP11ClientProtocol = _LenientHTTP11ClientProtocol
LenientHTTPClientParser = _LenientHTTPClientParser
"""Scrapy's parser of HTTP/1.1 responses; ``STATUS`` is the state it is in before the status line."""


def use_connection_pool(handler: Any, make_pool: Callable[[Any], Any]) -> None:
    """Give Scrapy's HTTP/1.1 handler (``_pool``) the pool ``make_pool(stock_pool)`` returns."""
    handler._pool = make_pool(handler._pool)


def wrap_tls_policy(handler: Any, wrap: Callable[[Any], Any]) -> None:
    """Give Scrapy's HTTP/1.1 handler (``_contextFactory``, what every download's agent asks for
    TLS options) the HTTPS policy ``wrap(stock_policy)`` returns."""
    handler._contextFactory = wrap(handler._contextFactory)


def set_protocol_factory(pool: Any, factory: Callable[..., Any]) -> None:
    """Have Twisted's connection pool (``_factory``) build its connections' protocols with ``factory``."""
    pool._factory = factory


def quiescent_callback(factory: Any) -> Any:
    """What a protocol built by Twisted's HTTP/1.1 client factory calls when it is idle."""
    return factory._quiescentCallback


def rebind_parser(protocol: Any, parser_class: type) -> Any:
    """The response parser Twisted's protocol just made for a request (``_parser``), its class
    replaced by ``parser_class`` (a subclass of the parser's own); None when the request
    failed at once."""
    parser = protocol._parser
    if parser is not None:
        parser.__class__ = parser_class
    return parser


def intercept_reconnect(connection: Any, wrap: Callable[[Any], Any]) -> Any:
    """The protocol under a pooled connection; where the connection is Twisted's retrying wrapper
    (``_RetryingHTTP11ClientProtocol``), which writes a request again on a new connection when the
    kept-alive one turns out closed, each new connection it makes (``_newConnection``) passes
    through ``wrap`` first."""
    reconnect = getattr(connection, "_newConnection", None)
    if reconnect is not None:
        connection._newConnection = lambda: reconnect().addCallback(wrap)
    return getattr(connection, "_clientProtocol", connection)


def tls_handshake_pending(protocol: Any) -> bool:
    """Whether ``protocol`` runs over Twisted's TLS protocol, whose handshake is not done yet
    (``_handshakeDone``); it then tells the protocol when it is (``IHandshakeListener``)."""
    transport = protocol.transport
    return getattr(transport, "wrappedProtocol", None) is protocol and not getattr(transport, "_handshakeDone", True)


def holds_unsent_bytes(transport: Any) -> bool:
    """Whether bytes written to ``transport`` may still sit in its buffers or in those of the
    transports below it: TLS application data waiting for the handshake (``_handshakeDone``,
    ``_appSendBuffer``), TCP data not yet written to the socket (``_tempDataLen``,
    ``dataBuffer`` past ``offset``)."""
    while transport is not None:
        if getattr(transport, "disconnected", False):
            return False  # gone: nothing more will leave
        if not getattr(transport, "_handshakeDone", True) or getattr(transport, "_appSendBuffer", None):
            return True
        if getattr(transport, "_tempDataLen", 0) or len(getattr(transport, "dataBuffer", b"")) > getattr(
            transport, "offset", 0
        ):
            return True
        transport = getattr(transport, "transport", None)
    return False


# --- Scrapy's commands ------------------------------------------------------------------------------


def command_crawler(command: BaseRunSpiderCommand, spider: str) -> Crawler:
    """The crawler Scrapy's own ``crawl`` command makes for ``spider`` (``_create_crawler``: the
    process's crawler, watched for feeds no exporter writes)."""
    return command._create_crawler(spider)


# --- Scrapy's downloader middlewares --------------------------------------------------------------


def retry_request(middleware: RetryMiddleware, request: Request, reason: Any) -> Request | None:
    """The retry of ``request`` by Scrapy's ``RetryMiddleware`` with its settings and the
    request's own (``_retry``: ``get_retry_request`` with ``max_retry_times``,
    ``priority_adjust``, the give-up log level and the stats), or None once it gives up."""
    return middleware._retry(request, reason)


DecompressionMaxSizeExceeded = _DecompressionMaxSizeExceeded
"""What Scrapy's decompression raises past ``DOWNLOAD_MAXSIZE`` (its middleware drops the response)."""


class DecodingCompressionMiddleware(HttpCompressionMiddleware):
    """Scrapy's ``HttpCompressionMiddleware`` with its private step that decodes one content
    encoding (``_decode``) open to subclasses as ``decode``."""

    def _decode(self, body: bytes, encoding: bytes, max_size: int) -> bytes:  # type: ignore[override]
        return self.decode(body, encoding, max_size)

    def decode(self, body: bytes, encoding: bytes, max_size: int) -> bytes:
        return HttpCompressionMiddleware._decode(body, encoding, max_size)


def meta_refresh_ignore_tags(middleware: MetaRefreshMiddleware) -> list[str]:
    """The tags inside which Scrapy's ``MetaRefreshMiddleware`` ignores a refresh
    (``METAREFRESH_IGNORE_TAGS``, kept as ``_ignore_tags``)."""
    return middleware._ignore_tags


class CheckedRedirectBase(BaseRedirectMiddleware):
    """Scrapy's redirect middlewares with their private step that builds every redirect
    (``_redirect``) open to a check: ``check_redirect`` raises to refuse one."""

    def _redirect(self, redirected: Request, request: Request, reason: Any) -> Request:
        self.check_redirect(redirected, request)
        return super()._redirect(redirected, request, reason)

    def check_redirect(self, redirected: Request, request: Request) -> None:
        """Raise ``IgnoreRequest`` (or a subclass) to refuse ``redirected``."""


# --- Protego ----------------------------------------------------------------------------------------


def protego_groups(parser: Protego) -> dict[str, Any]:
    """The groups of a parsed robots.txt by product token (``_user_agents``)."""
    return parser._user_agents


def matched_rule(group: Any, url: str) -> str | None:
    """The rule of ``group`` that decides for ``url`` (``Disallow: /private``), read from the
    rules in the order Protego evaluates them (longest match first, Allow on ties: ``_rules``,
    each a field and a URL pattern with its source text ``_pattern``), so that it always agrees
    with Protego's verdict; None when no rule matches."""
    quoted = _quote_path(url)
    for rule in group._rules:
        if rule.value.match(quoted):
            return f"{rule.field.capitalize()}: {rule.value._pattern}"
    return None

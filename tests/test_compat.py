"""Canaries for ``crawler.compat``: every private part of Scrapy, Twisted and Protego the crawler
uses, checked against the installed versions. A failure here names the part an upgrade moved."""

from __future__ import annotations

import gzip
import hashlib
import inspect
import warnings
from types import SimpleNamespace
from typing import Any

import pytest
from protego import Protego
from scrapy import Request, Spider
from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.core.engine import ExecutionEngine
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware, RedirectMiddleware
from scrapy.downloadermiddlewares.retry import RetryMiddleware
from scrapy.http import Response
from scrapy.statscollectors import StatsCollector
from scrapy.utils.gz import gunzip
from scrapy.utils.test import get_crawler
from twisted.internet.abstract import FileDescriptor
from twisted.internet.defer import succeed
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.ssl import optionsForClientTLS
from twisted.internet.testing import StringTransport
from twisted.protocols.tls import TLSMemoryBIOFactory, TLSMemoryBIOProtocol
from twisted.web._newclient import HTTPClientParser
from twisted.web._newclient import Request as TxRequest
from twisted.web.client import HTTPConnectionPool, _RetryingHTTP11ClientProtocol
from twisted.web.http_headers import Headers

from crawler import compat
from crawler.compat import PlainMemoryStatsCollector
from crawler.http.header_limits import BoundedHTTP11ClientFactory, BoundedHTTPClientParser, HeaderLimits
from tests.helpers import project_settings


def test_the_engine_is_asked_again_through_its_slot() -> None:
    # The engine schedules itself this way; schedule_engine makes the same call.
    assert "self._slot.nextcall.schedule()" in inspect.getsource(ExecutionEngine)
    crawler = get_crawler(Spider)
    crawler.engine = ExecutionEngine(crawler, lambda _: None)
    assert crawler.engine._slot is None
    compat.schedule_engine(crawler)  # no slot (the spider is not open): nothing to do
    calls: list[int] = []
    crawler.engine._slot = SimpleNamespace(nextcall=SimpleNamespace(schedule=lambda: calls.append(1)))
    compat.schedule_engine(crawler)
    assert calls == [1]


def test_the_project_collects_stats_as_scrapy_does() -> None:
    crawler = get_crawler(Spider, project_settings())
    stats = crawler.stats
    assert isinstance(stats, PlainMemoryStatsCollector)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecation warning either way of calling
        stats.inc_value("pages")
        stats.inc_value("pages", 2)
        stats.inc_value("bytes", 10, start=100)
        stats.set_value("state", "open")
        stats.max_value("largest", 5)
        stats.max_value("largest", 3)
        stats.min_value("smallest", 5)
        stats.min_value("smallest", 3)
        stats.inc_value("pages", spider=None)
    assert stats.get_stats() == {"pages": 4, "bytes": 110, "state": "open", "largest": 5, "smallest": 3}
    assert stats.get_value("missing", "default") == "default"
    crawler.spider = Spider("named")
    stats.close_spider()
    assert stats.spider_stats["named"]["pages"] == 4


def test_scrapy_s_attribute_hook_is_still_only_the_deprecation_check() -> None:
    # The collector skips Scrapy's __getattribute__, which in Scrapy 2.19 only wraps the methods
    # in a warning about their spider argument. If Scrapy changes it, read what it does now.
    source = inspect.getsource(StatsCollector.__getattribute__)
    assert hashlib.sha256(source.encode()).hexdigest()[:16] == "a21e390ac4030d4c", source


def test_the_lenient_parser_is_twisted_s_and_starts_at_the_status_line() -> None:
    assert issubclass(compat.LenientHTTPClientParser, HTTPClientParser)
    parser = HTTPClientParser(TxRequest(b"GET", b"/", Headers(), None), lambda rest: None)
    parser.makeConnection(StringTransport())
    assert parser.state == compat.STATUS


def test_a_protocol_built_by_the_bounded_factory_reads_with_the_bounded_parser() -> None:
    idle: list[Any] = []
    factory = BoundedHTTP11ClientFactory(idle.append, None, limits=HeaderLimits(max_bytes=0, max_lines=3))
    assert compat.quiescent_callback(factory) == idle.append
    protocol = factory.buildProtocol(None)
    protocol.makeConnection(StringTransport())
    protocol.request(TxRequest(b"GET", b"/", Headers({b"host": [b"example.com"]}), None))
    assert type(protocol._parser) is BoundedHTTPClientParser
    assert protocol._parser.limits == HeaderLimits(max_bytes=0, max_lines=3)


def test_the_handler_s_pool_can_be_replaced_and_builds_protocols_with_its_factory() -> None:
    # Built in __init__ and handed to every download (building a handler needs a running reactor).
    assert "self._pool: HTTPConnectionPool = HTTPConnectionPool(" in inspect.getsource(HTTP11DownloadHandler.__init__)
    assert "pool=self._pool" in inspect.getsource(HTTP11DownloadHandler.download_request)
    stock = HTTPConnectionPool(SimpleNamespace(), persistent=True)
    handler = SimpleNamespace(_pool=stock)
    compat.use_connection_pool(handler, lambda old: SimpleNamespace(replaced=old))
    assert handler._pool.replaced is stock
    # The pool makes each new connection's protocol with its factory.
    assert "self._factory" in inspect.getsource(HTTPConnectionPool._newConnection)
    compat.set_protocol_factory(stock, BoundedHTTP11ClientFactory)
    assert stock._factory is BoundedHTTP11ClientFactory


def test_the_handler_s_tls_policy_can_be_wrapped() -> None:
    # Built in __init__ and handed to every download's agent.
    assert "self._contextFactory: IPolicyForHTTPS = " in inspect.getsource(HTTP11DownloadHandler.__init__)
    assert "contextFactory=self._contextFactory" in inspect.getsource(HTTP11DownloadHandler.download_request)
    handler = SimpleNamespace(_contextFactory="stock")
    compat.wrap_tls_policy(handler, lambda old: SimpleNamespace(wrapped=old))
    assert handler._contextFactory.wrapped == "stock"


def test_the_retrying_wrapper_s_new_connections_can_be_intercepted() -> None:
    # A cached connection comes wrapped, and the wrapper writes again on a new one.
    assert "_RetryingHTTP11ClientProtocol" in inspect.getsource(HTTPConnectionPool.getConnection)
    underneath, replacement = SimpleNamespace(transport="t"), SimpleNamespace(transport="t2")
    wrapper = _RetryingHTTP11ClientProtocol(underneath, lambda: succeed(replacement))
    wrapped: list[Any] = []
    assert compat.intercept_reconnect(wrapper, lambda new: wrapped.append(new) or new) is underneath
    wrapper._newConnection()
    assert wrapped == [replacement]
    plain = SimpleNamespace(transport="t")
    assert compat.intercept_reconnect(plain, lambda new: new) is plain


def test_unsent_bytes_are_read_from_the_buffers_twisted_keeps_them_in() -> None:
    descriptor = FileDescriptor(reactor=SimpleNamespace())  # a TCP transport's base
    for name in ("dataBuffer", "offset", "_tempDataLen", "disconnected"):
        assert hasattr(descriptor, name), name
    tls = inspect.getsource(TLSMemoryBIOProtocol)
    assert "_handshakeDone" in tls and "_appSendBuffer" in tls
    sent = SimpleNamespace(disconnected=False, dataBuffer=b"abc", offset=3, _tempDataLen=0, transport=None)
    assert not compat.holds_unsent_bytes(sent)
    assert compat.holds_unsent_bytes(SimpleNamespace(**{**vars(sent), "offset": 1}))
    assert compat.holds_unsent_bytes(SimpleNamespace(**{**vars(sent), "_tempDataLen": 5}))
    handshaking = SimpleNamespace(disconnected=False, _handshakeDone=False, transport=sent)
    assert compat.holds_unsent_bytes(handshaking)
    assert not compat.holds_unsent_bytes(SimpleNamespace(disconnected=True, _tempDataLen=5))


def test_a_pending_tls_handshake_is_read_from_twisted_s_tls_protocol_which_tells_when_it_is_done() -> None:
    assert "IHandshakeListener.providedBy(self.wrappedProtocol)" in inspect.getsource(TLSMemoryBIOProtocol)
    factory = TLSMemoryBIOFactory(optionsForClientTLS("example.com"), True, Factory.forProtocol(Protocol))
    tls = factory.buildProtocol(None)
    tls.makeConnection(StringTransport())  # the ClientHello is written; nothing has come back
    assert compat.tls_handshake_pending(tls.wrappedProtocol)
    tls._handshakeDone = True
    assert not compat.tls_handshake_pending(tls.wrappedProtocol)
    plain = Protocol()
    plain.makeConnection(StringTransport())
    assert not compat.tls_handshake_pending(plain)


def test_scrapy_decodes_each_encoding_through_the_step_a_subclass_replaces() -> None:
    assert "self._decode(" in inspect.getsource(HttpCompressionMiddleware)
    with pytest.raises(compat.DecompressionMaxSizeExceeded):
        gunzip(gzip.compress(b"x" * 1000), max_size=10)

    class Counting(compat.DecodingCompressionMiddleware):
        decoded: list[bytes] = []

        def decode(self, body: bytes, encoding: bytes, max_size: int) -> bytes:
            self.decoded.append(encoding)
            return super().decode(body, encoding, max_size)

    middleware = Counting.from_crawler(get_crawler(Spider))
    request = Request("http://example.com/")
    compressed = Response(
        request.url, body=gzip.compress(b"<p>hi</p>"), headers={"Content-Encoding": "gzip"}, request=request
    )
    assert middleware.process_response(request, compressed).body == b"<p>hi</p>"
    assert Counting.decoded == [b"gzip"]


def test_every_redirect_passes_the_check_and_a_refusal_stops_it() -> None:
    checked: list[str] = []

    class Checked(compat.CheckedRedirectBase, RedirectMiddleware):
        def check_redirect(self, redirected: Request, request: Request) -> None:
            checked.append(redirected.url)
            if "refused" in redirected.url:
                raise ValueError("refused")

    middleware = Checked.from_crawler(get_crawler(Spider))
    request = Request("http://example.com/a")
    moved = Response(request.url, status=301, headers={"Location": "/b"}, request=request)
    assert middleware.process_response(request, moved).url == "http://example.com/b"
    refused = Response(request.url, status=302, headers={"Location": "/refused"}, request=request)
    with pytest.raises(ValueError, match="refused"):
        middleware.process_response(request, refused)
    assert checked == ["http://example.com/b", "http://example.com/refused"]


def test_the_crawl_command_makes_its_crawler_through_the_process() -> None:
    assert "self.crawler_process.create_crawler(spidercls)" in inspect.getsource(ScrapyCrawlCommand._create_crawler)
    made: list[str] = []
    command = ScrapyCrawlCommand()
    command.crawler_process = SimpleNamespace(create_crawler=lambda name: made.append(name) or get_crawler(Spider))
    assert compat.command_crawler(command, "links").spidercls is Spider
    assert made == ["links"]


def test_scrapy_s_retry_middleware_retries_with_its_settings_and_gives_up() -> None:
    crawler = get_crawler(Spider, {"RETRY_TIMES": 1})
    crawler.spider = Spider.from_crawler(crawler, "s")
    middleware = RetryMiddleware.from_crawler(crawler)
    request = Request("http://example.com/")
    retry = compat.retry_request(middleware, request, "503 Service Unavailable")
    assert retry is not None and retry.meta["retry_times"] == 1 and retry.dont_filter
    assert compat.retry_request(middleware, retry, "503 Service Unavailable") is None
    assert crawler.stats.get_value("retry/max_reached") == 1


def test_the_meta_refresh_middleware_keeps_the_tags_it_ignores() -> None:
    middleware = MetaRefreshMiddleware.from_crawler(get_crawler(Spider, {"METAREFRESH_IGNORE_TAGS": ["noscript", "x"]}))
    assert compat.meta_refresh_ignore_tags(middleware) == ["noscript", "x"]


def test_protego_s_groups_and_the_rule_that_decides() -> None:
    parser = Protego.parse(
        "User-agent: crawler\nAllow: /private/open\nDisallow: /private\n\nUser-agent: *\nDisallow: /"
    )
    groups = compat.protego_groups(parser)
    assert set(groups) == {"crawler", "*"}
    assert compat.matched_rule(groups["crawler"], "http://h.example/private/x") == "Disallow: /private"
    assert compat.matched_rule(groups["crawler"], "http://h.example/private/open/1") == "Allow: /private/open"
    assert compat.matched_rule(groups["crawler"], "http://h.example/public") is None

"""``DOWNLOAD_HANDLERS`` for ``http`` and ``https``: Scrapy's HTTP/1.1 handler, with

- the response's header section bounded (``CRAWLER_MAX_HEADER_BYTES``, ``CRAWLER_MAX_HEADERS``);
- each request held until its domain may be sent to, and the guard's refusals said as such
  (``crawler.download.gate``, as over HTTP/2);
- each request written only if its domain may still be sent to once its connection can carry it
  (a new connection takes round trips; ``crawler.download.departures``);
- each request stamped when its bytes left (``crawler.download.departures``): the departure
  time (``request_sent_at``) and the delay in force (``delay_in_force``) go into its meta and
  the domain limiter is told (``sent``), so a domain's next request counts from then; with
  ``CRAWLER_DEPARTURE_LOG``, the departure is also appended to that file at once
  (``crawler.download.departure_log``);
- at most ``CRAWLER_MAX_IDLE_CONNECTIONS`` idle connections kept in all (``crawler.download.idle_pool``);
- TLS options made for each new connection, not for every request (``crawler.download.tls``).
"""

from __future__ import annotations

import logging
from functools import partial

from scrapy import Request
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.crawler import Crawler
from scrapy.http import Response
from twisted.web.client import HTTPConnectionPool

from crawler.compat import set_protocol_factory, use_connection_pool, wrap_tls_policy
from crawler.download.departure_log import DepartureLog
from crawler.download.departures import ReadyTellingFactory, SentReportingPool
from crawler.download.gate import DepartureGate
from crawler.download.tls import OptionsWhenConnecting
from crawler.http.header_limits import HeaderLimits
from crawler.politeness.slots import DELAY_IN_FORCE, DOMAIN, SENT_AT

logger = logging.getLogger(__name__)


class GuardedHTTPDownloadHandler(HTTP11DownloadHandler):
    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        from twisted.internet import reactor  # the one Scrapy installed

        self.gate = DepartureGate(crawler)
        self.limiter = self.gate.limiter
        self._departure_log = DepartureLog.from_crawler(crawler)
        settings = crawler.settings
        limits = HeaderLimits(settings.getint("CRAWLER_MAX_HEADER_BYTES"), settings.getint("CRAWLER_MAX_HEADERS"))
        self._sending = SentReportingPool(reactor, self._sent, self.gate.may_leave)
        self._sending.max_idle = settings.getint("CRAWLER_MAX_IDLE_CONNECTIONS")
        set_protocol_factory(self._sending, partial(ReadyTellingFactory, limits=limits))

        def reporting(stock: HTTPConnectionPool) -> SentReportingPool:
            self._sending.maxPersistentPerHost = stock.maxPersistentPerHost
            return self._sending

        use_connection_pool(self, reporting)
        stats = crawler.stats
        wrap_tls_policy(
            self,
            lambda policy: OptionsWhenConnecting(policy, lambda: stats.inc_value("downloader/tls_connection_count")),
        )

    async def download_request(self, request: Request) -> Response:
        return await self.gate.download(request, self._download)

    async def _download(self, request: Request) -> Response:
        self._sending.sending = request
        return await super().download_request(request)

    async def close(self) -> None:
        try:
            await super().close()
        finally:
            if self._departure_log is not None:
                self._departure_log.close()

    def _sent(self, request: Request) -> None:
        limiter = self.limiter
        sent_at = request.meta[SENT_AT] = limiter.clock()
        logger.debug("Sent at %.6f: %s", sent_at, request)
        domain = request.meta.get(DOMAIN)
        if domain is not None:
            request.meta[DELAY_IN_FORCE] = limiter.sent(domain)
        if self._departure_log is not None:
            self._departure_log.departed(sent_at, request.url)

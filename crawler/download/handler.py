"""``DOWNLOAD_HANDLERS`` for ``http`` and ``https``: Scrapy's HTTP/1.1 handler, with

- the response's header section bounded (``CRAWLER_MAX_HEADER_BYTES``, ``CRAWLER_MAX_HEADERS``);
- a connection the guarded resolver refused reported as ``BlockedByPolicy`` with its reason,
  not as a failed lookup to retry;
- a request held until its domain's delay has passed since the last one left, or until the
  time the shared frontier gave it (``CRAWLER_HANDOUT_LEAD_SECONDS``: the frontier hands it
  out ahead of its slot), and until a block (a 429) ends: it may have been waiting in
  Scrapy's downloader or a middleware when the answer that blocked the domain arrived;
- each request stamped when its bytes left (``crawler.download.departures``): the departure
  time (``request_sent_at``) and the delay in force (``delay_in_force``) go into its meta and
  the domain limiter is told (``sent``), so a domain's next request counts from then.
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial

from scrapy import Request
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.crawler import Crawler
from scrapy.exceptions import CannotResolveHostError
from scrapy.http import Response
from scrapy.utils.httpobj import urlparse_cached
from twisted.web.client import HTTPConnectionPool

from crawler.compat import set_protocol_factory, use_connection_pool
from crawler.download.departures import SentReportingPool
from crawler.guard.blocked import refuse
from crawler.guard.resolver import installed_resolver
from crawler.http.header_limits import BoundedHTTP11ClientFactory, HeaderLimits
from crawler.politeness.slots import DELAY_IN_FORCE, DOMAIN, LEAVE_AT, SENT_AT
from crawler.services import CrawlServices

logger = logging.getLogger(__name__)


class GuardedHTTPDownloadHandler(HTTP11DownloadHandler):
    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        from twisted.internet import reactor  # the one Scrapy installed

        self.services = services = CrawlServices.of(crawler)
        self.limiter = services.limiter
        settings = crawler.settings
        limits = HeaderLimits(settings.getint("CRAWLER_MAX_HEADER_BYTES"), settings.getint("CRAWLER_MAX_HEADERS"))
        self.spacing_margin = settings.getfloat("CRAWLER_SPACING_MARGIN")
        self._sending = SentReportingPool(reactor, self._sent)
        set_protocol_factory(self._sending, partial(BoundedHTTP11ClientFactory, limits=limits))

        def reporting(stock: HTTPConnectionPool) -> SentReportingPool:
            self._sending.maxPersistentPerHost = stock.maxPersistentPerHost
            return self._sending

        use_connection_pool(self, reporting)

    async def download_request(self, request: Request) -> Response:
        domain = request.meta.get(DOMAIN)
        if domain is not None:
            await self._departure_time_came(domain, request.meta.get(LEAVE_AT, 0.0))
        try:
            return await self._download(request)
        except CannotResolveHostError:
            resolver = installed_resolver()
            refusal = resolver.refusals.get(urlparse_cached(request).hostname or "") if resolver is not None else None
            if refusal is None:
                raise
            guard = self.services.guard
            if guard is not None and guard.seeded(request):  # a seed of another process
                return await self._download(request)
            raise refuse(self.crawler.stats, request, refusal) from None

    async def _departure_time_came(self, domain: str, leave_at: float) -> None:
        # Asked again after every wait: a block or a longer delay may have come meanwhile.
        limiter = self.limiter
        while (wait := self._departure_at(domain, leave_at) - (now := limiter.clock())) > 0:
            if limiter.state(domain).blocked_until > now:
                self.crawler.stats.inc_value("limiter/held_for_block_count")
            await asyncio.sleep(wait)

    def _departure_at(self, domain: str, leave_at: float) -> float:
        """When the domain's request may leave, ``CRAWLER_SPACING_MARGIN`` of its delay later
        than the delay allows: a site that reads one request late (its server busy) by up to
        that much still sees the whole delay before the next one."""
        at = max(leave_at, self.limiter.departure_at(domain))
        return at + self.spacing_margin * self.limiter.effective_delay(domain) if at else at

    async def _download(self, request: Request) -> Response:
        self._sending.sending = request
        return await super().download_request(request)

    def _sent(self, request: Request) -> None:
        limiter = self.limiter
        sent_at = request.meta[SENT_AT] = limiter.clock()
        logger.debug("Sent at %.6f: %s", sent_at, request)
        domain = request.meta.get(DOMAIN)
        if domain is not None:
            request.meta[DELAY_IN_FORCE] = limiter.sent(domain)

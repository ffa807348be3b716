"""A shared request that waited long before leaving may have lost its domain's slot: its process
stopped (SIGSTOP, a frozen machine) for longer than the lease, the frontier reclaimed the lease
and the slot with it, and another worker has since paced the domain. Sent with its old slot, it
would leave at once, closer to the other worker's last request than the delay.

Before such a request leaves (held more than half a lease since its departure time), its lease
is renewed: kept, it goes as it was; lost, it waits for a fresh slot of its domain, as a request
of this process's own does (``try_start``), and so leaves no sooner than the delay after the
domain's last request from any process. It is fetched then, possibly twice (the frontier handed
it out again): a duplicate within the lease, never a short gap.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler

from crawler.politeness.slots import HOLDER, LEAVE_AT, RESERVATION
from crawler.services import CrawlServices

logger = logging.getLogger(__name__)

GRANT_POLL_SECONDS = 0.05


class HeldSlotCheck:
    def __init__(self, crawler: Crawler):
        services = CrawlServices.of(crawler)
        self.redis = services.redis
        self.limiter = services.limiter
        self.stats = crawler.stats
        self.patience = crawler.settings.getfloat("CRAWLER_LEASE_SECONDS") / 2

    async def keep_or_renew(self, domain: str, request: Request) -> None:
        """Return once ``request`` holds a live slot of ``domain`` (at once for most)."""
        meta = request.meta
        if self.redis is None or LEAVE_AT not in meta or HOLDER not in meta:
            return  # not handed out by the shared frontier
        if self.limiter.clock() - meta[LEAVE_AT] < self.patience:
            return
        if await self._renewed(domain, meta[HOLDER]):
            return
        self.stats.inc_value("frontier/lease_lapsed")
        logger.info(
            "The lease of %s lapsed before it left (its process held it too long): waiting for a new slot", request.url
        )
        meta[RESERVATION] = await self._fresh_slot(domain, meta[HOLDER])

    async def _renewed(self, domain: str, key: str) -> bool:
        assert self.redis is not None
        store = self.redis.store
        return bool(await self.redis.link.answer(lambda pipe: store.renew([key], domain, client=pipe)))

    async def _fresh_slot(self, domain: str, holder: str) -> Any:
        while (reservation := self.limiter.try_start(domain, holder)) is None:
            await asyncio.sleep(GRANT_POLL_SECONDS)
        return reservation

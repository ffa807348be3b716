"""A shared request that waited long before leaving may have lost its domain's slot. The shared
frontier holds a domain's slot for the request handed it until the request says it left, or
for ``SEND_WINDOW`` (``redis/frontier.lua``, 10 s) at most: after that another process may take
the domain's next slot, and a request sent on the old one would leave close to that process's.
Requests wait that long when their process stops (SIGSTOP, a frozen machine) or when its engine
stops taking them (its rows cannot be written: the database is away), while their leases are
renewed or not.

So a request that has not left ``STALE_AFTER`` seconds after its slot takes a fresh slot of its
domain before it leaves, as a request of this process's own does (``try_start``: the domain's
delay after its last request from any process, its concurrency counting this request's own
hold out). Its lease is renewed first: lost (held past the lease, the frontier handed the
request out again), it is fetched twice, a duplicate within the lease, never a short gap.
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
STALE_AFTER = 5.0
"""Half the frontier's ``SEND_WINDOW``: a request leaving on its slot by then has told Redis
so well before another process could take the next one."""


class HeldSlotCheck:
    def __init__(self, crawler: Crawler):
        services = CrawlServices.of(crawler)
        self.redis = services.redis
        self.limiter = services.limiter
        self.stats = crawler.stats

    async def keep_or_renew(self, domain: str, request: Request) -> None:
        """Return once ``request`` holds a live slot of ``domain`` (at once for most)."""
        meta = request.meta
        if self.redis is None or LEAVE_AT not in meta or HOLDER not in meta:
            return  # not handed out by the shared frontier
        if self.limiter.clock() - meta[LEAVE_AT] < STALE_AFTER:
            return
        self.stats.inc_value("frontier/slot_stale")
        if not await self._renewed(domain, meta[HOLDER]):
            self.stats.inc_value("frontier/lease_lapsed")
            logger.info(
                "The lease of %s lapsed before it left (its process held it too long): waiting for a new slot",
                request.url,
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

"""A shared request that waited long before leaving may have lost its domain's slot. The shared
frontier holds a domain's slot for the request handed it until the request says it left, or for
``SEND_WINDOW`` (``redis/frontier.lua``, 10 s; the domain's delay when longer) at most: after
that another process may take the domain's next slot, and a request sent on the old one would
leave close to that process's. Requests wait that long when their process stops (SIGSTOP, a
frozen machine) or when its engine stops taking them (its rows cannot be written: the database
is away), while their leases are renewed or not.

So a request that has not left within half the send window of the end of that hold takes a
fresh slot of its domain before it leaves (``reslot``: the domain's delay after its last request
from any process, with the spacing margin the departure gate adds; its share of the domain's
concurrency stays its own while its lease does). Its lease is renewed first. Handed out again to
another process meanwhile (held past the lease), it is not sent (``NotSent``, no row): that
process fetches it. Expired and not handed out again yet, it is fetched twice, a duplicate within
the lease, never a short gap. A job that ends meanwhile does not wait for the slot (``NotSent``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, cast

from scrapy import Request
from scrapy.crawler import Crawler

from crawler.compat import engine_closing
from crawler.exceptions import NotSent
from crawler.politeness.slots import HOLDER, LEAVE_AT, RESERVATION, stale_after
from crawler.services import CrawlServices

if TYPE_CHECKING:
    from crawler.politeness.limiter_redis import RedisDomainLimiter
    from crawler.redis.store import Renewal

logger = logging.getLogger(__name__)

GRANT_POLL_SECONDS = 0.05


class HeldSlotCheck:
    def __init__(self, crawler: Crawler):
        services = CrawlServices.of(crawler)
        self.crawler = crawler
        self.redis = services.redis
        self.limiter = services.limiter
        self.stats = crawler.stats
        self.spacing_margin = crawler.settings.getfloat("CRAWLER_SPACING_MARGIN")

    async def keep_or_renew(self, domain: str, request: Request) -> None:
        """Return once ``request`` holds a live slot of ``domain`` (at once for most)."""
        meta = request.meta
        if self.redis is None or LEAVE_AT not in meta or HOLDER not in meta:
            return  # not handed out by the shared frontier
        if self.limiter.clock() - meta[LEAVE_AT] < stale_after(self.limiter.effective_delay(domain)):
            return
        self.stats.inc_value("frontier/slot_stale")
        renewal = await self._renewal(domain, meta[HOLDER])
        if renewal.lost:
            self.stats.inc_value("frontier/lease_lost_before_sent")
            # The slot and the share of the concurrency its key names are the other process's now.
            meta.pop(HOLDER)
            meta.pop(RESERVATION, None)
            raise NotSent("not fetched: its lease lapsed while this process stood still, and another process has it")
        if not renewal.renewed:
            self.stats.inc_value("frontier/lease_lapsed")
            logger.info(
                "The lease of %s lapsed before it left (its process held it too long): waiting for a new slot",
                request.url,
            )
        meta[RESERVATION] = await self._fresh_slot(domain, meta[HOLDER])

    async def _renewal(self, domain: str, key: str) -> Renewal:
        from crawler.redis.store import Renewal  # a shared crawl's (redis is not imported otherwise)

        assert self.redis is not None
        store = self.redis.store
        return Renewal.of(await self.redis.link.answer(lambda pipe: store.renew([key], domain, client=pipe)))

    async def _fresh_slot(self, domain: str, holder: str) -> Any:
        limiter = cast("RedisDomainLimiter", self.limiter)  # a shared crawl's (imported only there)
        while (reservation := limiter.try_start(domain, holder, stale=True)) is None:
            if engine_closing(self.crawler):  # a pause, a lost frontier: the job ends without it
                raise NotSent("not fetched: the job ended before its domain had a slot for it again")
            blocked_for = limiter.state(domain).blocked_until - limiter.clock()
            await asyncio.sleep(max(GRANT_POLL_SECONDS, blocked_for))
        # The departure gate's margin, as the slot's own time came now.
        await asyncio.sleep(self.spacing_margin * limiter.effective_delay(domain))
        return reservation

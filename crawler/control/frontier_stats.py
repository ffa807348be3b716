"""How big the crawl's frontier is, as stats for the heartbeat: requests queued (and, in a
shared crawl, leased, and leases reclaimed from dead workers; those are the whole crawl's,
the same in every process's heartbeat)."""

from __future__ import annotations

import asyncio
from typing import Any

from scrapy.crawler import Crawler

from crawler.politeness.limiter import DomainLimiter
from crawler.shared.connection import REDIS_ERRORS
from crawler.shared.limiter import SharedDomainLimiter


async def frontier_stats(crawler: Crawler, limiter: DomainLimiter) -> dict[str, Any]:
    if isinstance(limiter, SharedDomainLimiter):
        try:
            sizes = await asyncio.to_thread(limiter.frontier.sizes)  # Redis, off the reactor
        except REDIS_ERRORS:
            return {}
        return {
            "frontier/queued": sizes.queued + sizes.delayed,
            "frontier/leased": sizes.leased,
            "frontier/lease_reclaimed": sizes.reclaimed,
        }
    scheduler: Any = crawler.engine.scheduler if crawler.engine is not None else None
    return {"frontier/queued": len(scheduler)} if scheduler is not None else {}

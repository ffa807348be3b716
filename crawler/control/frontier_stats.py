"""How big the crawl's frontier is, as stats for the heartbeat: requests queued (and, in a
shared crawl, leased, and leases reclaimed from dead workers; those are the whole crawl's,
the same in every process's heartbeat)."""

from __future__ import annotations

from typing import Any

from scrapy.crawler import Crawler

from crawler.politeness.limiter import DomainLimiter
from crawler.shared.limiter import SharedDomainLimiter
from crawler.shared.link import REDIS_ERRORS


async def frontier_stats(crawler: Crawler, limiter: DomainLimiter) -> dict[str, Any]:
    if isinstance(limiter, SharedDomainLimiter):
        if not limiter.link.available or limiter.link.closed:
            return {}  # Redis away (the link says so in the log), or the scheduler closed
        try:
            sizes = await limiter.link.run(lambda _: limiter.frontier.sizes())  # on the Redis thread
        except REDIS_ERRORS:
            return {}
        return {
            "frontier/queued": sizes.queued + sizes.delayed,
            "frontier/leased": sizes.leased,
            "frontier/lease_reclaimed": sizes.reclaimed,
        }
    scheduler: Any = crawler.engine.scheduler if crawler.engine is not None else None
    return {"frontier/queued": len(scheduler)} if scheduler is not None else {}

"""How much the frontier holds, for the heartbeat: the queue of this process, or in a shared
crawl the whole crawl's (the same in every process's heartbeat), read from Redis on the link's
thread."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scrapy.crawler import Crawler

from crawler.frontier.queue_local import PolitePriorityQueue
from crawler.services import CrawlServices


class FrontierCounts:
    def __init__(self, crawler: Crawler):
        self.crawler = crawler
        services = CrawlServices.of(crawler)
        self.limiter = services.limiter
        self.redis = services.redis

    async def sizes(self) -> dict[str, Any]:
        """Requests queued (in a shared crawl also leased, and leases reclaimed from dead workers),
        as stats."""
        if self.redis is None:
            scheduler: Any = self.crawler.engine.scheduler if self.crawler.engine is not None else None
            return {"frontier/queued": len(scheduler)} if scheduler is not None else {}
        from crawler.redis.link import REDIS_ERRORS  # a shared crawl's only: redis-py

        link, store = self.redis.link, self.redis.store
        if not self._shared():
            return {}
        try:
            sizes = await link.run(lambda _: store.sizes())
        except REDIS_ERRORS:
            return {}
        return {
            "frontier/queued": sizes.waiting,
            "frontier/spilled": sizes.spilled,
            "frontier/leased": sizes.leased,
            "frontier/lease_reclaimed": sizes.reclaimed,
        }

    async def loads(self, domains: Iterable[str]) -> dict[str, tuple[int, int]]:
        """Requests in flight and queued of each domain (in a shared crawl, the whole crawl's)."""
        names = list(domains)
        if not self._shared():
            return self._loads(names, {})
        return self._loads(names, await self.redis.link.run(lambda _: self._shared_loads(names)))  # type: ignore[union-attr]

    def loads_now(self, domains: Iterable[str]) -> dict[str, tuple[int, int]]:
        """The same, at once, from this thread (the spider is closing: the link may be closed)."""
        names = list(domains)
        return self._loads(names, self._shared_loads(names) if self._shared(closing=True) else {})

    def _shared(self, closing: bool = False) -> bool:
        """Whether the shared figures can be read: Redis there (the link says so in the log when
        it is not) and, but at the close, the link not closed with the scheduler."""
        return self.redis is not None and self.redis.link.available and (closing or not self.redis.link.closed)

    def _shared_loads(self, domains: list[str]) -> dict[str, tuple[int, int]]:
        assert self.redis is not None
        from crawler.redis.link import REDIS_ERRORS

        try:
            return self.redis.store.domain_loads(domains)
        except REDIS_ERRORS:
            return {}

    def _loads(self, domains: list[str], shared: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
        engine = self.crawler.engine
        queue = getattr(engine.scheduler, "mqs", None) if engine is not None else None
        local = queue if isinstance(queue, PolitePriorityQueue) else None
        return {
            domain: shared.get(domain) or (self.limiter.state(domain).inflight, local.queued(domain) if local else 0)
            for domain in domains
        }

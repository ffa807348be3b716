"""Every ``CRAWLER_SPILL_SECONDS``, this worker's turn at moving cold domains between the shared
crawl's Redis and PostgreSQL (``crawler.frontier.spill``); on in a shared crawl on PostgreSQL
with ``CRAWLER_SPILL_ABOVE`` above 0."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Self

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from crawler.extensions.periodic import PeriodicExtension
from crawler.politeness.config import spill_threshold
from crawler.services import CrawlServices

if TYPE_CHECKING:
    from crawler.frontier.spill import SpillMover

logger = logging.getLogger(__name__)


class ColdDomains(PeriodicExtension):
    """Every ``CRAWLER_SPILL_SECONDS``, this worker's turn at moving cold domains (on in a
    shared crawl on PostgreSQL with ``CRAWLER_SPILL_ABOVE`` above 0)."""

    SECONDS_SETTING = "CRAWLER_SPILL_SECONDS"

    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        self.mover: SpillMover | None = None
        """The ``SpillMover``, made at the first turn (a crawl not shared never imports redis)."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not spill_threshold(crawler.settings):
            raise NotConfigured
        return super().from_crawler(crawler)

    async def tick(self) -> bool:
        from crawler.redis.link import REDIS_ERRORS

        try:
            await self._move()
        except REDIS_ERRORS:
            pass  # Redis away (the link says so) or closed with the scheduler: next turn
        return True

    async def _move(self) -> None:
        assert self.storage is not None
        from crawler.frontier.queue_redis import RedisFrontierQueue
        from crawler.frontier.spill import SpillMover

        backend = self.storage.backend
        if self.mover is None:
            redis = CrawlServices.of(self.crawler).redis
            assert redis is not None
            mover = SpillMover(redis.store, redis.link, self.spider.crawl_id)
            if forgotten := await mover.forget_other_runs(backend):
                logger.info("Deleted %d spilled requests of earlier runs of the crawl", forgotten)
            self.mover = mover
        spilled, refilled = await self.mover.turn(backend)
        stats = self.crawler.stats
        if spilled:
            stats.inc_value("frontier/spill_moved", spilled)
        if refilled:
            stats.inc_value("frontier/spill_refills", len(refilled))
            # This worker's pops may find them at once, not at the shard's next poll.
            queue = getattr(getattr(self.crawler.engine, "scheduler", None), "queue", None)
            if isinstance(queue, RedisFrontierQueue):
                for domain in refilled:
                    queue.may_be_ready(domain)

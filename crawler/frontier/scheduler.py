"""Scrapy's scheduler, plus a row for every URL a job leaves unfetched when it ends early.

``SCHEDULER`` points here. When a job stops before its frontier is empty (a time budget, the
job failure threshold, a signal) and nothing keeps the queue for a resumed run (``JOBDIR``),
each queued URL gets a ``skipped`` row saying why, so that no accepted URL goes unrecorded.
With ``REDIS_URL`` set, the crawl's frontier is shared instead (``SharedFrontierScheduler``).
"""

from __future__ import annotations

from typing import Any

from scrapy.core.scheduler import Scheduler
from scrapy.crawler import Crawler
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred

from crawler.frontier.queue import PolitePriorityQueue
from crawler.frontier.unfetched import record_unfetched
from crawler.shared.connection import redis_enabled


class FrontierScheduler(Scheduler):
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        if redis_enabled(crawler.settings):
            from crawler.shared.scheduler import SharedFrontierScheduler  # builds on this module's queue

            return SharedFrontierScheduler.from_crawler(crawler)
        return super().from_crawler(crawler)

    def close(self, reason: str) -> Deferred[None]:
        return deferred_from_coro(self._close(reason))

    async def _close(self, reason: str) -> None:
        if reason != "finished" and self.dqs is None and isinstance(self.mqs, PolitePriorityQueue):
            assert self.crawler is not None
            await record_unfetched(self.crawler, self.mqs.drain(), reason)
        closed = super().close(reason)
        if closed is not None:
            await maybe_deferred_to_future(closed)

"""The scheduler of a crawl in one process: Scrapy's, plus a row for every URL a job leaves
unfetched when it ends early.

``SCHEDULER`` names it (the shared-crawl add-on names ``RedisFrontierScheduler`` instead when
``REDIS_URL`` is set). When a job stops before its frontier is empty (a time budget, the job
failure threshold, a signal) and nothing keeps the queue for a resumed run (``JOBDIR``), each
queued URL gets a ``skipped`` row saying why, so that no accepted URL goes unrecorded.
"""

from __future__ import annotations

from scrapy.core.scheduler import Scheduler
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred

from crawler.frontier.queue_local import PolitePriorityQueue
from crawler.frontier.unfetched import record_unfetched


class LocalFrontierScheduler(Scheduler):
    def close(self, reason: str) -> Deferred[None]:
        return deferred_from_coro(self._close(reason))

    async def _close(self, reason: str) -> None:
        if reason != "finished" and self.dqs is None and isinstance(self.mqs, PolitePriorityQueue):
            assert self.crawler is not None
            await record_unfetched(self.crawler, self.mqs.drain(), reason)
        closed = super().close(reason)
        if closed is not None:
            await maybe_deferred_to_future(closed)

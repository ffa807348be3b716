"""Scrapy's scheduler, plus a row for every URL a job leaves unfetched when it ends early.

``SCHEDULER`` points here. When a job stops before its frontier is empty (a time budget, the
job failure threshold, a signal) and nothing keeps the queue for a resumed run (``JOBDIR``),
each queued URL gets a ``skipped`` row saying why, so that no accepted URL goes unrecorded.
"""

from __future__ import annotations

from twisted.internet.defer import Deferred

from scrapy.core.scheduler import Scheduler

from crawler.frontier.queue import PolitePriorityQueue
from crawler.pipelines.rows import page_row
from crawler.storage.shared import shared_storage


class FrontierScheduler(Scheduler):
    def close(self, reason: str) -> Deferred[None] | None:
        if reason != "finished" and self.dqs is None and isinstance(self.mqs, PolitePriorityQueue):
            self._record_unfetched(reason)
        return super().close(reason)

    def _record_unfetched(self, reason: str) -> None:
        assert self.crawler is not None
        storage = shared_storage(self.crawler)
        recorder = getattr(self.crawler.spider, "recorder", None)
        if storage is None or recorder is None:
            return
        for request in self.mqs.drain():
            if request.meta.get("dont_obey_robotstxt"):  # a spider's own robots.txt request
                continue
            item = recorder.base(request, "skipped")
            item.error = f"not fetched: the job ended early ({reason})"
            storage.outbox.new_pages.append(page_row(item))
            self.stats.inc_value("pages/status/skipped")

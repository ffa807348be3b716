"""Report the crawl process every ``CRAWLER_HEARTBEAT_SECONDS`` (0: never): its ``workers`` row
(the heartbeat, with the Scrapy stats that are numbers), a ``stats_samples`` row, and
``domain_state`` rows for the domains that changed (``CRAWLER_DOMAIN_STATE``); a last heartbeat
with state ``finished`` when the spider closes. The rows go with the storage pipeline's batches,
so the reactor never waits for the database.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import Response

from crawler.control.activity import DomainActivity
from crawler.control.snapshots import domain_state_rows
from crawler.control.worker import stats_json, worker_id, worker_row
from crawler.extensions.periodic import PeriodicExtension
from crawler.frontier.counts import FrontierCounts
from crawler.pipelines.storage import StoragePipeline
from crawler.politeness.slots import domain_key


class Heartbeat(PeriodicExtension):
    SECONDS_SETTING = "CRAWLER_HEARTBEAT_SECONDS"

    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        self.activity = DomainActivity() if crawler.settings.getbool("CRAWLER_DOMAIN_STATE") else None
        self.counts = FrontierCounts(crawler)
        self.limiter = self.counts.limiter
        self.state = "running"
        """What the next heartbeat says; the control extension sets ``paused`` and ``closing``."""
        self.started_at = datetime.now(UTC)
        if self.activity is not None:
            crawler.signals.connect(self.response_downloaded, signal=signals.response_downloaded)
            crawler.signals.connect(self.request_left_downloader, signal=signals.request_left_downloader)

    async def tick(self) -> bool:
        self._report(self.state, await self.counts.sizes())
        if self.activity is not None:
            changed = self.activity.take()
            loads = await self.counts.loads(changed)
            self._observed().domain_state.extend(domain_state_rows(changed, loads, self.limiter))
        return True

    def closed(self) -> None:
        self._report("finished")
        if self.activity is not None:
            changed = self.activity.take()
            loads = self.counts.loads_now(changed)
            self._observed().domain_state.extend(domain_state_rows(changed, loads, self.limiter))

    def response_downloaded(self, response: Response, request: Request) -> None:
        assert self.activity is not None
        self.activity.answered(domain_key(request), id(request), response.status)

    def request_left_downloader(self, request: Request) -> None:
        assert self.activity is not None
        self.activity.left(domain_key(request), id(request))

    def _report(self, state: str, extra: dict[str, Any] | None = None) -> None:
        now = datetime.now(UTC)
        spider = self.spider
        wid = worker_id(spider.job_id)
        stats = stats_json(
            {**self.crawler.stats.get_stats(), **(extra or {}), "storage/pending_rows": self._pending_rows()}
        )
        observed = self._observed()
        observed.workers.append(worker_row(wid, spider, self.started_at, now, state, stats))
        observed.stats_samples.append((wid, spider.job_id, now, stats))

    def _observed(self) -> Any:
        assert self.storage is not None
        return self.storage.outbox.observed

    def _pending_rows(self) -> int:
        pipeline = self.crawler.get_item_pipeline(StoragePipeline)
        pending = len(pipeline.pending) if pipeline is not None else 0
        return pending + (len(self.storage.outbox) if self.storage is not None else 0)

"""Report the crawl process every ``CRAWLER_HEARTBEAT_SECONDS`` (0: never): its ``workers`` row
(the heartbeat, with the Scrapy stats that are numbers), a ``stats_samples`` row, and
``domain_state`` rows for the domains that changed (``CRAWLER_DOMAIN_STATE``); a last heartbeat
with state ``finished`` when the spider closes. The rows go with the storage pipeline's batches,
so the reactor never waits for the database.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any, Self

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response

from crawler.control.activity import DomainActivity
from crawler.control.snapshots import DomainSnapshots
from crawler.control.worker import stats_json, worker_id, worker_row
from crawler.frontier.meta import domain_key
from crawler.pipelines.storage import StoragePipeline
from crawler.politeness.limiter import limiter_for
from crawler.storage.shared import SharedStorage, shared_storage

logger = logging.getLogger(__name__)


class Heartbeat:
    def __init__(self, crawler: Crawler):
        self.crawler = crawler
        settings = crawler.settings
        self.seconds = settings.getfloat("CRAWLER_HEARTBEAT_SECONDS")
        self.activity = DomainActivity() if settings.getbool("CRAWLER_DOMAIN_STATE") else None
        self.state = "running"
        """What the next heartbeat says; the control extension sets ``paused`` and ``closing``."""
        self.storage: SharedStorage | None = None
        self.snapshots: DomainSnapshots | None = None
        self.started_at = datetime.now(UTC)
        self._task: asyncio.Task[None] | None = None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        if self.activity is not None:
            crawler.signals.connect(self.response_downloaded, signal=signals.response_downloaded)
            crawler.signals.connect(self.request_left_downloader, signal=signals.request_left_downloader)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if crawler.settings.getfloat("CRAWLER_HEARTBEAT_SECONDS") <= 0:
            raise NotConfigured
        return cls(crawler)

    @property
    def worker_id(self) -> str:
        return worker_id(self.spider.job_id)

    @property
    def spider(self) -> Any:
        return self.crawler.spider

    def spider_opened(self) -> None:
        self.storage = shared_storage(self.crawler)
        if self.storage is None:
            return  # no storage pipeline: nowhere to report
        if self.activity is not None:
            self.snapshots = DomainSnapshots(self.crawler, limiter_for(self.crawler), self.activity)
        self._report(self.state)
        self._task = asyncio.ensure_future(self._beat_periodically())

    async def _beat_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.seconds)
            try:
                self._report(self.state)
                if self.snapshots is not None:
                    self._observed().domain_state.extend(await self.snapshots.rows())
            except Exception:  # a report lost is no reason to stop reporting
                logger.exception("Could not report the worker's state")

    def spider_closed(self, spider: Spider, reason: str) -> None:
        # Not a coroutine: its rows are in the outbox before the storage pipeline's own
        # spider_closed handler (connected after this one) writes the last batch.
        if self._task is not None:
            self._task.cancel()
        if self.storage is None:
            return
        self._report("finished")
        if self.snapshots is not None:
            self._observed().domain_state.extend(self.snapshots.rows_now())

    def response_downloaded(self, response: Response, request: Request) -> None:
        assert self.activity is not None
        self.activity.answered(domain_key(request), id(request), response.status)

    def request_left_downloader(self, request: Request) -> None:
        assert self.activity is not None
        self.activity.left(domain_key(request), id(request))

    def _report(self, state: str) -> None:
        now = datetime.now(UTC)
        spider = self.spider
        stats = stats_json({**self.crawler.stats.get_stats(), "storage/pending_rows": self._pending_rows()})
        observed = self._observed()
        observed.workers.append(worker_row(self.worker_id, spider, self.started_at, now, state, stats))
        observed.stats_samples.append((self.worker_id, spider.job_id, now, stats))

    def _observed(self) -> Any:
        assert self.storage is not None
        return self.storage.outbox.observed

    def _pending_rows(self) -> int:
        pipeline = self.crawler.get_item_pipeline(StoragePipeline)
        pending = len(pipeline.pending) if pipeline is not None else 0
        return pending + (len(self.storage.outbox) if self.storage is not None else 0)

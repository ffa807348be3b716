"""Batch rows into the database: 100 rows or 1 s, whichever comes first.

The write never blocks the reactor (psycopg's asyncio connection; SQLite on its own thread).
While the database is unavailable the rows stay in memory and the write is retried with
backoff; past ``CRAWLER_STORAGE_MAX_PENDING_ROWS`` the pipeline makes the crawl wait. At
shutdown everything is flushed; what still cannot be written after
``CRAWLER_STORAGE_SHUTDOWN_TIMEOUT`` goes to a JSON-lines file, so no row is lost.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Self

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider
from scrapy.utils.python import global_object_name

from crawler.exitcodes import REASON_DATABASE_REFUSED, REASON_DATABASE_UNREACHABLE, job_status
from crawler.items import PageItem, SitemapEntryItem
from crawler.services import CrawlServices
from crawler.signals import rows_committed
from crawler.storage import StorageRefused, StorageUnavailable
from crawler.storage.backend import Batch
from crawler.storage.jobs import (
    FAILED_STATUSES,
    FETCHED_STATUSES,
    PAGE_STATUS_STAT,
    JobRecord,
    finish_job,
    start_job,
)
from crawler.storage.rows import json_safe, page_row, sitemap_entry_row
from crawler.storage.schema import PAGE_COLUMNS

logger = logging.getLogger(__name__)

_URL = PAGE_COLUMNS.index("url")


class StoragePipeline:
    def __init__(self, crawler: Crawler):
        self.crawler = crawler
        self.stats = crawler.stats
        settings = crawler.settings
        self.batch_size = settings.getint("CRAWLER_BATCH_SIZE")
        self.batch_seconds = settings.getfloat("CRAWLER_BATCH_SECONDS")
        self.max_pending = settings.getint("CRAWLER_STORAGE_MAX_PENDING_ROWS")
        self.retry_max_delay = settings.getfloat("CRAWLER_STORAGE_RETRY_MAX_DELAY")
        self.shutdown_timeout = settings.getfloat("CRAWLER_STORAGE_SHUTDOWN_TIMEOUT")
        self.connect_timeout = settings.getfloat("CRAWLER_STORAGE_CONNECT_TIMEOUT")
        self.unsaved_dir = Path(settings.get("CRAWLER_UNSAVED_ROWS_DIR"))
        self.storage = CrawlServices.of(crawler).storage
        self.backend = self.storage.backend
        self.storage.flush = self.flush
        self.outbox = self.storage.outbox
        self.pending = Batch()
        self.counters = {"pages_fetched": 0, "pages_failed": 0, "pages_unchanged": 0, "rows_written": 0}
        self._flush_lock = asyncio.Lock()
        self._flusher: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()
        self._deadline: float | None = None
        self._started = time.monotonic()
        crawler.signals.connect(self.request_dropped, signal=signals.request_dropped)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    @property
    def spider(self) -> Spider:
        assert self.crawler.spider is not None
        return self.crawler.spider

    async def open_spider(self) -> None:
        await self._open_backend()
        spider = self.spider
        job = JobRecord(
            id=spider.job_id,
            spider=spider.name,
            seeds=",".join(getattr(spider, "seeds", [])),
            started_at=datetime.now(UTC),
        )
        await self._until_available(lambda: start_job(self.backend, job), "record the job")
        logger.info("Storing rows in %s (job %s)", self.backend.target, job.id)
        self._flusher = asyncio.ensure_future(self._flush_periodically())

    async def _open_backend(self) -> None:
        """Open the database, or close the job at once with a clear reason: a refusal is final,
        an outage is waited out for ``CRAWLER_STORAGE_CONNECT_TIMEOUT``."""
        deadline = time.monotonic() + self.connect_timeout
        try:
            await self._until_available(self.backend.open, "open the database", deadline=deadline)
        except StorageRefused as exc:
            logger.error("The database refused the connection: %s", exc)
            raise CloseSpider(REASON_DATABASE_REFUSED) from exc
        except StorageUnavailable as exc:
            logger.error("The database stayed unreachable for %.0f s: %s", self.connect_timeout, exc)
            raise CloseSpider(REASON_DATABASE_UNREACHABLE) from exc
        self.storage.opened = True

    async def process_item(self, item: Any) -> Any:
        if isinstance(item, PageItem):
            self._count(item)
            self.pending.pages.append(page_row(item))
        elif isinstance(item, SitemapEntryItem):
            self.pending.sitemap_entries.append(sitemap_entry_row(item))
        else:
            return item
        if len(self.pending) >= self.max_pending:
            self.stats.inc_value("storage/backpressure_waits")
            await self.flush()
        elif len(self.pending) >= self.batch_size and not self._flush_lock.locked():
            self._in_background(self.flush(full_batches_only=True))
        return item

    def request_dropped(self, request: Request, spider: Spider) -> None:
        # A redirect whose target was already crawled is dropped by the dupefilter; the URL
        # that redirected was accepted, so it still gets its row.
        if request.meta.get("redirect_urls") and hasattr(spider, "recorder"):
            item = spider.recorder.redirected_to_seen(request)
            self.pending.pages.append(page_row(item))

    async def close_spider(self) -> None:
        if not self.storage.opened:
            return
        if self._flusher is not None:
            self._flusher.cancel()
        # The deadline also ends the retries of flushes already under way.
        self._deadline = time.monotonic() + self.shutdown_timeout
        await asyncio.gather(*self._background, return_exceptions=True)
        try:
            await self.flush()
        except StorageUnavailable as exc:
            self._spill(exc)

    async def spider_closed(self, spider: Spider, reason: str) -> None:
        # After the scheduler has closed: its skipped rows are in the outbox, and the reason
        # the job ended is known.
        try:
            if self.storage.opened:
                await self._finish_job(spider, reason)
        except StorageUnavailable as exc:
            self._spill(exc)
        finally:
            await self.backend.close()
        logger.info(
            "Crawl %s %s: %d pages fetched, %d unchanged, %d errors, %d rows written in %.1f s; rows are in %s",
            spider.job_id,
            reason,
            self.counters["pages_fetched"],
            self.counters["pages_unchanged"],
            self.counters["pages_failed"],
            self.counters["rows_written"],
            time.monotonic() - self._started,
            self.backend.target,
        )
        errors = " (--status error: what failed and why)" if self.counters["pages_failed"] else ""
        logger.info(
            "To look at them: scrapy export --job %s%s; scrapy serve for the dashboard (with the same DATABASE_URL)",
            spider.job_id,
            errors,
        )

    async def _finish_job(self, spider: Spider, reason: str) -> None:
        await self.flush()
        await self._until_available(
            lambda: finish_job(
                self.backend,
                spider.job_id,
                finished_at=datetime.now(UTC),
                status=job_status(reason),
                reason=reason,
                counters=self.counters,
                stats=json.dumps(self.crawler.stats.get_stats(), default=str),
            ),
            "record the end of the job",
        )

    async def flush(self, *, full_batches_only: bool = False) -> None:
        """Write what is pending, batch by batch, waiting while the database is away; with
        ``full_batches_only`` the rest waits for the timer."""
        async with self._flush_lock:
            self.outbox.drain_into(self.pending)
            while self.pending and (not full_batches_only or len(self.pending) >= self.batch_size):
                batch = self.pending.head(self.batch_size)
                await self._until_available(partial(self._write, batch), "write rows")
                self.pending.remove(batch)
                self._committed(batch)
                items = len(batch.pages) + len(batch.new_pages) + len(batch.sitemap_entries)
                self.counters["rows_written"] += items
                self.stats.inc_value("storage/rows_written", items)
                self.stats.inc_value("storage/batches")

    async def _write(self, batch: Batch) -> None:
        try:
            await self.backend.write(batch)
        except StorageUnavailable:
            raise
        except Exception as exc:
            # A row the database refuses must not block the others: write one by one and
            # keep what is refused in the file of unsaved rows.
            logger.error("Batch refused (%s: %s); writing its rows one by one", global_object_name(type(exc)), exc)
            await self._write_one_by_one(batch)

    async def _write_one_by_one(self, batch: Batch) -> None:
        for kind in Batch.KINDS:
            for row in getattr(batch, kind):
                single = Batch(**{kind: [row]})
                try:
                    await self.backend.write(single)
                except StorageUnavailable:
                    raise
                except Exception as exc:
                    self.stats.inc_value("storage/rows_refused")
                    self._append_unsaved(kind, [row], f"{global_object_name(type(exc))}: {exc}")

    async def _until_available(self, operation: Any, what: str, deadline: float | None = None) -> None:
        delay = 0.5
        since: float | None = None
        while True:
            try:
                await operation()
            except StorageUnavailable as exc:
                now = time.monotonic()
                since = since or now
                # Read each time: the shutdown deadline also ends retries already under way.
                limit = min(filter(None, (deadline, self._deadline)), default=None)
                if limit is not None:
                    if now >= limit:
                        raise
                    delay = min(delay, limit - now)
                self.stats.inc_value("storage/retries")
                logger.warning(
                    "Could not %s (%s); retrying in %.1f s, rows kept in memory: %d",
                    what,
                    exc,
                    delay,
                    len(self.pending),
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.retry_max_delay)
            else:
                if since is not None:
                    logger.info("Database available again after %.1f s", time.monotonic() - since)
                return

    async def _flush_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.batch_seconds)
            if (self.pending or self.outbox) and not self._flush_lock.locked():
                self._in_background(self.flush())

    def _in_background(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        task.add_done_callback(_log_failure)

    def _count(self, item: PageItem) -> None:
        if item.status in FETCHED_STATUSES:
            self.counters["pages_fetched"] += 1
        elif item.status in FAILED_STATUSES:
            self.counters["pages_failed"] += 1
        elif item.status == "unchanged":
            self.counters["pages_unchanged"] += 1
        self.stats.inc_value(f"{PAGE_STATUS_STAT}{item.status}")

    def _spill(self, exc: Exception) -> None:
        self.outbox.drain_into(self.pending)
        for kind in Batch.KINDS:
            self._append_unsaved(kind, getattr(self.pending, kind), str(exc))
        logger.error(
            "The database stayed unavailable (%s): %d rows were written to %s instead",
            exc,
            len(self.pending),
            self._unsaved_path(),
        )
        self._committed(self.pending)
        self.pending = Batch()

    def _committed(self, batch: Batch) -> None:
        urls = [row[_URL] for row in (*batch.pages, *batch.new_pages)]
        if urls:
            self.crawler.signals.send_catch_log(rows_committed, urls=urls)

    def _append_unsaved(self, kind: str, rows: list[tuple[Any, ...]], reason: str) -> None:
        if not rows:
            return
        self.stats.inc_value("storage/rows_unsaved", len(rows))
        path = self._unsaved_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as file:
            for row in rows:
                file.write(json.dumps({"table": kind, "reason": reason, "row": json_safe(row)}) + "\n")

    def _unsaved_path(self) -> Path:
        return self.unsaved_dir / f"unsaved-rows-{self.spider.job_id}.jsonl"


def _log_failure(task: asyncio.Task[None]) -> None:
    # An unavailable database at shutdown is handled by close_spider, which spills the rows.
    if not task.cancelled() and not isinstance(task.exception(), (type(None), StorageUnavailable)):
        logger.error("Background flush failed", exc_info=task.exception())

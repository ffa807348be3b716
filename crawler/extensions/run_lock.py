"""One run of a crawl at a time: two overlapping runs (a cron job slower than its schedule)
would crawl every page twice, at twice the allowed rate.

Without ``REDIS_URL``, a job takes the lock of its crawl id (the spider and its seeds, or
``-a crawl=NAME``) in the database, a row of ``crawl_locks``; a second job of the same crawl
closes at once with reason ``failed_already_running``. The holder renews a heartbeat every
third of ``CRAWLER_RUN_LOCK_SECONDS`` and deletes the row when it ends; a lock whose heartbeat
is older than that belongs to a dead process and is taken over. With ``REDIS_URL`` a second
process joins the crawl as one more worker instead, so no lock is taken.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from datetime import UTC, datetime, timedelta
from typing import Self

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider, NotConfigured

from crawler.exitcodes import REASON_ALREADY_RUNNING
from crawler.services import CrawlServices
from crawler.storage import StorageBackend, StorageUnavailable
from crawler.storage.locks import lock_holders, release_lock, renew_lock, take_lock

logger = logging.getLogger(__name__)


class RunLock:
    def __init__(self, crawler: Crawler):
        self.crawler = crawler
        self.stale_after = crawler.settings.getfloat("CRAWLER_RUN_LOCK_SECONDS")
        self._heartbeat: asyncio.Task[None] | None = None
        self._backend: StorageBackend | None = None
        # Connected before the storage pipeline's handlers (extensions are built first), so the
        # lock is released before the pipeline closes the database.
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if CrawlServices.of(crawler).shared or not crawler.settings.getfloat("CRAWLER_RUN_LOCK_SECONDS"):
            raise NotConfigured
        return cls(crawler)

    @property
    def _key(self) -> tuple[str, str]:
        spider = self.crawler.spider
        return spider.crawl_id, spider.job_id

    async def spider_opened(self) -> None:
        storage = CrawlServices.of(self.crawler).open_storage
        if storage is None or not hasattr(self.crawler.spider, "crawl_id"):
            return
        crawl, job = self._key
        now = datetime.now(UTC)
        stale_before = now - timedelta(seconds=self.stale_after)
        if not await take_lock(storage.backend, crawl, job, socket.gethostname(), os.getpid(), now, stale_before):
            rows = await lock_holders(storage.backend, crawl)
            holder = ", ".join(f"job {h} on {host} (pid {pid}, last heartbeat {beat})" for h, host, pid, beat in rows)
            logger.error("Crawl %s is already running: %s; this run stops", crawl, holder or "another job")
            raise CloseSpider(REASON_ALREADY_RUNNING)
        self._backend = storage.backend
        self._heartbeat = asyncio.ensure_future(self._beat())

    async def _beat(self) -> None:
        crawl, job = self._key
        while True:
            await asyncio.sleep(self.stale_after / 3)
            assert self._backend is not None
            try:
                await renew_lock(self._backend, crawl, job, datetime.now(UTC))
            except StorageUnavailable as exc:
                logger.warning("Could not renew the lock of crawl %s: %s", crawl, exc)

    async def spider_closed(self) -> None:
        if self._heartbeat is None or self._backend is None:
            return
        self._heartbeat.cancel()
        try:
            await release_lock(self._backend, *self._key)
        except StorageUnavailable as exc:
            logger.warning(
                "Could not release the lock of crawl %s (taken over after %.0f s): %s",
                self._key[0],
                self.stale_after,
                exc,
            )

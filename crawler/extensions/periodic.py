"""The shape of an extension that works every N seconds while the spider is open, through the
crawl's storage (none without a storage pipeline)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, ClassVar, Self

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from crawler.services import CrawlServices
from crawler.storage import StorageUnavailable
from crawler.storage.outbox import CrawlStorage

logger = logging.getLogger(__name__)


class PeriodicExtension:
    SECONDS_SETTING: ClassVar[str]
    """The setting of the period; 0 turns the extension off."""

    def __init__(self, crawler: Crawler):
        self.crawler = crawler
        self.seconds = crawler.settings.getfloat(self.SECONDS_SETTING)
        self.storage: CrawlStorage | None = None
        self._task: asyncio.Task[None] | None = None
        self._warned_at = -1e9
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if crawler.settings.getfloat(cls.SECONDS_SETTING) <= 0:
            raise NotConfigured
        return cls(crawler)

    @property
    def spider(self) -> Any:
        return self.crawler.spider

    def spider_opened(self) -> None:
        self.storage = CrawlServices.of(self.crawler).open_storage
        if self.storage is not None:
            self._task = asyncio.ensure_future(self._run())

    def spider_closed(self) -> None:
        # Not a coroutine: what ``closed`` adds is in the outbox before the storage pipeline's
        # own spider_closed handler (connected after extensions') writes the last batch.
        if self._task is not None:
            self._task.cancel()
        if self.storage is not None:
            self.closed()

    async def _run(self) -> None:
        while True:
            try:
                if not await self.tick():
                    return
            except StorageUnavailable as exc:
                if time.monotonic() - self._warned_at > 60:
                    self._warned_at = time.monotonic()
                    logger.warning("%s: the database is unavailable (%s); the crawl goes on", type(self).__name__, exc)
            except Exception:  # one failed round is no reason to stop the next ones
                logger.exception("%s failed; trying again in %.1f s", type(self).__name__, self.seconds)
            await asyncio.sleep(self.seconds)

    async def tick(self) -> bool:
        """One round of work; False to stop."""
        raise NotImplementedError

    def closed(self) -> None:
        """The spider closes (the storage pipeline has not written its last batch yet)."""

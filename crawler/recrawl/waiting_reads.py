"""Reads of what is stored of the pages to schedule, which wait while the database is
unreachable: a URL whose stored state cannot be read would be scheduled as new and fetched again
before it is due (a 45 s outage fetched some 2,200 pages again in a long run)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from scrapy.crawler import Crawler

from crawler.storage import StorageUnavailable

logger = logging.getLogger(__name__)

T = TypeVar("T")

FIRST_RETRY_SECONDS = 0.5


class WaitingReads:
    def __init__(self, crawler: Crawler):
        self.crawler = crawler
        self.max_delay = crawler.settings.getfloat("CRAWLER_STORAGE_RETRY_MAX_DELAY")
        self.failing_since: float | None = None
        """When a read first failed in the outage under way (monotonic; None: none)."""

    async def read(self, read: Callable[[], Awaitable[T]]) -> T | None:
        """What ``read`` returns, tried again (backing off up to CRAWLER_STORAGE_RETRY_MAX_DELAY)
        until the database answers; None if the crawl is stopping meanwhile: its URLs are then
        scheduled as new, better fetched again than lost."""
        delay = FIRST_RETRY_SECONDS
        while True:
            try:
                value = await read()
            except StorageUnavailable as exc:
                self.crawler.stats.inc_value("recrawl/lookup_failed")
                if not self.crawler.crawling:
                    logger.warning(
                        "Could not read what is stored of the pages to schedule (%s): the crawl stops, scheduling them as new",
                        exc,
                    )
                    return None
                if self.failing_since is None:
                    self.failing_since = time.monotonic()
                    logger.warning(
                        "Could not read what is stored of the pages to schedule (%s): they wait for the database", exc
                    )
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.max_delay)
            else:
                if self.failing_since is not None:
                    waited = time.monotonic() - self.failing_since
                    self.failing_since = None
                    logger.info("What is stored of the pages can be read again after %.1f s", waited)
                return value

"""A log line every ``CRAWLER_REACTOR_HEARTBEAT_SECONDS`` with the reactor's lag: how late the
line came against when it was due. A reactor that something blocks (a synchronous call, a long
parse) shows as a gap in these lines and a lag; the largest lag is the stat
``reactor/max_lag``. Off by default (0)."""

from __future__ import annotations

import logging
import time
from typing import Self

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from twisted.internet import task

logger = logging.getLogger(__name__)


class ReactorHeartbeat:
    def __init__(self, crawler: Crawler, interval: float):
        self.stats = crawler.stats
        self.interval = interval
        self._loop = task.LoopingCall(self._beat)
        self._due = 0.0
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        interval = crawler.settings.getfloat("CRAWLER_REACTOR_HEARTBEAT_SECONDS")
        if interval <= 0:
            raise NotConfigured
        return cls(crawler, interval)

    def spider_opened(self) -> None:
        self._due = time.monotonic()
        self._loop.start(self.interval, now=True)

    def spider_closed(self) -> None:
        if self._loop.running:
            self._loop.stop()

    def _beat(self) -> None:
        now = time.monotonic()
        lag = max(0.0, now - self._due)
        self._due = now + self.interval
        self.stats.max_value("reactor/max_lag", round(lag, 3))
        logger.info("Reactor heartbeat: lag %.3f s", lag)

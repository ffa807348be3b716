"""scrapy-redis's scheduler for a crawl shared by several processes (``REDIS_URL`` set).

What it changes in scrapy-redis's: the queue and seen filter keys are the crawl's
(``crawl_prefix``), so separate crawls never meet; the queue is kept when a process closes
(another may still be working), and the leases the process still holds are given back; a
process whose frontier is idle waits for work as long as any process may still add some
(requests queued, delayed or leased), then ``CRAWLER_IDLE_CLOSE_SECONDS`` more (0: for ever),
and the process that closes a complete crawl deletes its keys;
requests that carry objects only their process understands (sitemap discovery) stay in a
local politeness-aware queue, paced by the same shared limiter.
"""

from __future__ import annotations

import logging
import time
from typing import Self

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.misc import load_object
from scrapy_redis.scheduler import Scheduler as RedisScheduler

from crawler.frontier.codec import UnserializableRequest
from crawler.frontier.queue import PolitePriorityQueue
from crawler.frontier.unfetched import record_unfetched
from crawler.shared.connection import REDIS_ERRORS, shared_services
from crawler.shared.dupefilter import SeenFilter
from crawler.shared.queue import SharedFrontierQueue

logger = logging.getLogger(__name__)


class SharedFrontierScheduler(RedisScheduler):
    queue: SharedFrontierQueue

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        services = shared_services(crawler)
        assert services is not None
        settings = crawler.settings
        scheduler = cls(
            server=services.client,
            persist=True,
            queue_key=services.prefix,
            queue_cls=settings.get("SCHEDULER_QUEUE_CLASS"),
            dupefilter=SeenFilter(
                services.client, services.key("seen"), crawler.request_fingerprinter, settings.getbool("DUPEFILTER_DEBUG")
            ),
        )
        scheduler.stats = crawler.stats
        scheduler.crawler = crawler
        scheduler.local = PolitePriorityQueue.from_crawler(
            crawler, load_object(settings["SCHEDULER_MEMORY_QUEUE"]), key=""
        )
        scheduler.idle_close = settings.getfloat("CRAWLER_IDLE_CLOSE_SECONDS")
        scheduler._idle_since = None
        crawler.signals.connect(scheduler.spider_idle, signal=signals.spider_idle)
        return scheduler

    def open(self, spider: Spider) -> None:
        # scrapy-redis's own open, with our queue class from SCHEDULER_QUEUE_CLASS and without
        # its flush-on-start: a joining process must never empty the others' frontier.
        self.spider = spider
        self.queue = load_object(self.queue_cls)(server=self.server, spider=spider, key=self.queue_key)
        sizes = self.queue.frontier.sizes()
        logger.info(
            "Shared crawl %s (%s): %d requests queued, %d waiting to retry, %d leased",
            spider.crawl_id, self.queue.key, sizes.queued, sizes.delayed, sizes.leased,
        )  # fmt: skip

    def enqueue_request(self, request: Request) -> bool:
        seen = None if request.dont_filter else self.df.marker(request)
        try:
            queued = self.queue.push(request, seen)  # marked seen and queued in one step
        except UnserializableRequest:
            queued = self._keep_local(request)
        if not queued:
            self.df.log(request, self.spider)
            return False
        self.stats.inc_value("scheduler/enqueued/redis")
        return True

    def _keep_local(self, request: Request) -> bool:
        try:
            if not request.dont_filter and self.df.request_seen(request):
                return False
        except REDIS_ERRORS:
            pass  # not known to be seen: better fetched twice than lost
        self.local.push(request)
        return True

    def next_request(self) -> Request | None:
        request = self.local.pop() if len(self.local) else None
        if request is None:
            request = self.queue.pop()
        if request is not None:
            self.stats.inc_value("scheduler/dequeued/redis")
        return request

    def has_pending_requests(self) -> bool:
        return bool(len(self.local) or len(self.queue))

    def close(self, reason: str) -> None:
        self.queue.release()
        if reason == "finished" and self._idle_since is not None:
            self._clear_if_complete()
        if reason != "finished":
            record_unfetched(self.crawler, self.local.drain(), reason)
        self.local.close()

    def spider_idle(self) -> None:
        """Keep an idle process while the crawl may still get work."""
        try:
            sizes = self.queue.frontier.sizes()
        except REDIS_ERRORS:
            raise DontCloseSpider from None  # Redis away: pause, do not finish
        if not sizes.empty:
            self._idle_since = None
            raise DontCloseSpider
        now = time.monotonic()
        if self._idle_since is None:
            self._idle_since = now
            logger.info("The shared frontier is empty; waiting for work")
        if not self.idle_close or now - self._idle_since < self.idle_close:
            raise DontCloseSpider

    def _clear_if_complete(self) -> None:
        """A crawl whose frontier stayed empty is complete: its keys go, so that the same
        command started again is a new crawl rather than one with every URL already seen."""
        try:
            if self.queue.frontier.sizes().empty:
                deleted = self.queue.frontier.clear()
                logger.info("The shared crawl %s is complete: %d keys deleted", self.spider.crawl_id, deleted)
        except REDIS_ERRORS as exc:
            logger.warning("Could not clear the completed crawl's keys: %s", exc)


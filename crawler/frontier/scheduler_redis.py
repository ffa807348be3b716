"""The scheduler of a crawl shared by several processes (``REDIS_URL``): scrapy-redis's, which
the shared-crawl add-on names in ``SCHEDULER``.

What it changes in scrapy-redis's: the queue and seen filter keys are the crawl's
(``crawl_prefix``), so separate crawls never meet; every Redis command goes through the
crawl's link, off the reactor; the queue is kept when a process closes (another may still be
working), and the leases the process still holds are given back; a process whose frontier is
idle waits for work as long as any process may still add some (requests queued, delayed or
leased), then ``CRAWLER_IDLE_CLOSE_SECONDS`` more (0: for ever), and the process that closes a
complete crawl deletes its keys; a crawl no worker has used for
``CRAWLER_CRAWL_REAP_SECONDS`` (its workers killed) is deleted when a worker opens it, so that
the same command started again crawls; requests that carry objects only their process
understands (sitemap discovery) stay in a local politeness-aware queue, paced by the same
shared limiter.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Self

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.misc import load_object
from scrapy_redis.scheduler import Scheduler as RedisScheduler
from twisted.internet.defer import Deferred

from crawler.frontier.codec import UnserializableRequest
from crawler.frontier.queue_local import PolitePriorityQueue
from crawler.frontier.queue_redis import RedisFrontierQueue
from crawler.frontier.unfetched import record_unfetched
from crawler.redis.connection import CrawlRedis
from crawler.redis.link import REDIS_ERRORS, Op
from crawler.redis.reaper import reclaim_if_dead
from crawler.services import CrawlServices

logger = logging.getLogger(__name__)


class RedisFrontierScheduler(RedisScheduler):
    queue: RedisFrontierQueue
    redis: CrawlRedis

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        services = CrawlServices.of(crawler)
        assert services.redis is not None, "a shared crawl needs REDIS_URL"
        settings = crawler.settings
        scheduler = cls(
            server=services.redis.client,
            persist=True,
            queue_key=services.redis.prefix,
            queue_cls=settings.get("SCHEDULER_QUEUE_CLASS"),
            dupefilter=services.seen,
        )
        scheduler.redis = services.redis
        scheduler.stats = crawler.stats
        scheduler.crawler = crawler
        scheduler.local = PolitePriorityQueue.from_crawler(
            crawler, load_object(settings["SCHEDULER_MEMORY_QUEUE"]), key=""
        )
        scheduler.idle_close = settings.getfloat("CRAWLER_IDLE_CLOSE_SECONDS")
        scheduler.reap_seconds = settings.getfloat("CRAWLER_CRAWL_REAP_SECONDS")
        scheduler.close_timeout = settings.getfloat("CRAWLER_REDIS_CLOSE_TIMEOUT")
        scheduler._idle_since = None
        scheduler._keeping = 0
        crawler.signals.connect(scheduler.spider_idle, signal=signals.spider_idle)
        return scheduler

    def open(self, spider: Spider) -> Deferred[None]:
        return deferred_from_coro(self._open(spider))

    async def _open(self, spider: Spider) -> None:
        # scrapy-redis's own open, with our queue class from SCHEDULER_QUEUE_CLASS and without
        # its flush-on-start: a joining process must never empty the others' frontier.
        self.spider = spider
        link = self.redis.link
        link.start(self.crawler.settings.getfloat("CRAWLER_REDIS_RETRY_SECONDS"), self.stats)
        frontier = self.redis.store
        deleted = await link.run(lambda _: reclaim_if_dead(frontier, self.reap_seconds))
        if deleted:
            logger.warning(
                "The shared crawl %s had no worker for %.0f s (killed before it ended): its %d keys were deleted",
                spider.crawl_id,
                self.reap_seconds,
                deleted,
            )
        sizes = await link.run(lambda _: frontier.sizes(beat=True))
        await link.run(lambda _: frontier.begin())
        self.queue = load_object(self.queue_cls)(server=self.server, spider=spider, key=self.queue_key)
        self.queue.start()
        logger.info(
            "Shared crawl %s (%s): %d requests queued, %d waiting to retry, %d leased",
            spider.crawl_id,
            self.queue.key,
            sizes.queued,
            sizes.delayed,
            sizes.leased,
        )

    def enqueue_request(self, request: Request) -> bool:
        seen = None if request.dont_filter else self.df.marker(request)
        try:
            # marked seen and queued in one step
            self.queue.push(request, seen, on_seen=lambda: self._dropped(request))
        except UnserializableRequest:
            self._keep_local(request, seen)
        self.stats.inc_value("scheduler/enqueued/redis")
        return True

    def _keep_local(self, request: Request, seen: tuple[str, ...] | None) -> None:
        if seen is None:
            self.local.push(request)
            return
        self._keeping += 1

        def marked(added: Any) -> None:
            self._keeping -= 1
            if added:
                self.local.push(request)
            else:
                self._dropped(request)

        self.redis.link.submit(Op(send=lambda pipe: self.df.mark(seen, pipe), done=marked))

    def _dropped(self, request: Request) -> None:
        """A request found seen once Redis answered: what Scrapy's engine does for a request
        its scheduler refuses at once (a redirect to a seen URL still gets its row)."""
        self.df.log(request, self.spider)
        self.crawler.signals.send_catch_log(signals.request_dropped, request=request, spider=self.spider)

    def next_request(self) -> Request | None:
        request = self.local.pop() if len(self.local) else None
        if request is None:
            request = self.queue.pop()
        if request is not None:
            self.stats.inc_value("scheduler/dequeued/redis")
        return request

    def has_pending_requests(self) -> bool:
        return bool(len(self.local) or self._keeping or len(self.queue))

    def close(self, reason: str) -> Deferred[None]:
        return deferred_from_coro(self._close(reason))

    async def _close(self, reason: str) -> None:
        link = self.redis.link
        self.queue.release()
        if reason != "finished":
            await record_unfetched(self.crawler, self.local.drain(), reason)
        self.local.close()
        if await link.drain(self.close_timeout) and reason == "finished" and self._idle_since is not None:
            await self._clear_if_complete()
        link.close()

    def spider_idle(self) -> None:
        """Keep an idle process while the crawl may still get work."""
        queue = self.queue
        now = time.monotonic()
        if not queue.link.available or queue.sizes_at < 0 or not queue.sizes.empty or len(queue) or self._keeping:
            self._idle_since = None
            raise DontCloseSpider  # work left, or Redis away: pause, do not finish
        if self._idle_since is None:
            self._idle_since = now
            logger.info("The shared frontier is empty; waiting for work")
        # Only a count asked for after the frontier went idle tells that it stayed so.
        if not self.idle_close or now - self._idle_since < self.idle_close or queue.sizes_at < self._idle_since:
            raise DontCloseSpider

    async def _clear_if_complete(self) -> None:
        """A crawl whose frontier stayed empty is complete: its keys go, so that the same
        command started again is a new crawl rather than one with every URL already seen."""
        frontier = self.queue.store

        def clear(_: Any) -> int | None:
            return frontier.complete() if frontier.sizes().empty else None

        try:
            deleted = await self.redis.link.run(clear)
        except REDIS_ERRORS as exc:
            logger.warning("Could not clear the completed crawl's keys: %s", exc)
            return
        if deleted is not None:
            logger.info("The shared crawl %s is complete: %d keys deleted", self.spider.crawl_id, deleted)

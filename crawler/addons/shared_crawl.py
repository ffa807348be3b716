"""``REDIS_URL``: the crawl shared by every process started with the same crawl id.

The crawl's services (``CrawlServices``) then keep their state in Redis, and the scheduler is
the shared one: this add-on names ``RedisFrontierScheduler`` in ``SCHEDULER`` in place of the
local one. An add-on because the switch is read once every source of settings has been (``-s``
included).
"""

from __future__ import annotations

from scrapy.settings import BaseSettings

from crawler.redis.connection import redis_enabled

LOCAL_SCHEDULER = "crawler.frontier.scheduler_local.LocalFrontierScheduler"
SHARED_SCHEDULER = "crawler.frontier.scheduler_redis.RedisFrontierScheduler"


class SharedCrawl:
    def update_settings(self, settings: BaseSettings) -> None:
        # Only the project's own scheduler is replaced: one named with -s stays.
        if redis_enabled(settings) and settings.get("SCHEDULER") == LOCAL_SCHEDULER:
            settings.set("SCHEDULER", SHARED_SCHEDULER, priority=settings.getpriority("SCHEDULER"))

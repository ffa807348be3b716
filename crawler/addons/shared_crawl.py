"""``REDIS_URL``: the crawl shared by every process started with the same crawl id.

The crawl's services (``CrawlServices``) then keep their state in Redis, and the scheduler is
the shared one: this add-on names ``RedisFrontierScheduler`` in ``SCHEDULER`` in place of the
local one. An add-on because the switch is read once every source of settings has been (``-s``
included).
"""

from __future__ import annotations

import logging

from scrapy.settings import BaseSettings

from crawler.redis import redis_enabled

logger = logging.getLogger(__name__)

LOCAL_SCHEDULER = "crawler.frontier.scheduler_local.LocalFrontierScheduler"
SHARED_SCHEDULER = "crawler.frontier.scheduler_redis.RedisFrontierScheduler"


class SharedCrawl:
    def update_settings(self, settings: BaseSettings) -> None:
        if not redis_enabled(settings):
            return
        # Only the project's own scheduler is replaced: another one named (with -s) stays.
        scheduler = settings.get("SCHEDULER")
        if scheduler == LOCAL_SCHEDULER:
            settings.set("SCHEDULER", SHARED_SCHEDULER, priority=settings.getpriority("SCHEDULER"))
        elif scheduler != SHARED_SCHEDULER:
            logger.warning(
                "REDIS_URL is set and SCHEDULER is %s: the crawl's pacing, robots.txt and scope are shared, "
                "its frontier only if that scheduler is a %s",
                scheduler,
                SHARED_SCHEDULER,
            )

"""The crawl's Redis connection: the client, and what
one process of a shared crawl holds of it (the client, the I/O link and the crawl's store).

Processes started with the same ``REDIS_URL`` and the same crawl id share one crawl.
"""

from __future__ import annotations

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from scrapy.settings import BaseSettings

from crawler.redis.keys import crawl_prefix
from crawler.redis.link import RedisLink
from crawler.redis.store import FrontierConfig, FrontierStore


def redis_client(settings: BaseSettings) -> redis.Redis:
    return redis.Redis.from_url(
        settings.get("REDIS_URL"),
        socket_timeout=settings.getfloat("CRAWLER_REDIS_TIMEOUT"),
        socket_connect_timeout=settings.getfloat("CRAWLER_REDIS_TIMEOUT"),
        # No retries with sleeps inside redis-py: the link tries again, without blocking anyone.
        retry=Retry(NoBackoff(), 0),
        health_check_interval=30,
    )


class CrawlRedis:
    """One process's connection to a shared crawl: one client, one link, one store."""

    def __init__(self, settings: BaseSettings, crawl: str, config: FrontierConfig):
        self.client = redis_client(settings)
        self.prefix = crawl_prefix(settings, crawl)
        self.store = FrontierStore(self.client, self.prefix, config)
        self.link = RedisLink(self.client)
        """Started off the reactor by the scheduler of a crawl process; at once until then."""

    def key(self, *parts: str) -> str:
        return self.store.key(*parts)

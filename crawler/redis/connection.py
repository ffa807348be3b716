"""The crawl's Redis connection: the client, and what
one process of a shared crawl holds of it (the client, the I/O link and the crawl's store).

Processes started with the same ``REDIS_URL`` and the same crawl id share one crawl.
``REDIS_URL`` may name a single Redis or any node of a Redis Cluster (or Valkey cluster):
``CRAWLER_REDIS_CLUSTER`` says which (``auto`` asks the server: ``INFO cluster``).
"""

from __future__ import annotations

from typing import Any

import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry
from scrapy.settings import BaseSettings

from crawler.redis.keys import crawl_prefix
from crawler.redis.link import RedisLink
from crawler.redis.shards import agreed_count
from crawler.redis.store import FrontierConfig, FrontierStore

CLUSTER_MODES = ("auto", "on", "off")


def cluster_mode(settings: BaseSettings) -> str:
    mode = str(settings.get("CRAWLER_REDIS_CLUSTER") or "auto").lower()
    if mode not in CLUSTER_MODES:
        raise ValueError(f"CRAWLER_REDIS_CLUSTER must be one of {', '.join(CLUSTER_MODES)}, not {mode!r}")
    return mode


def cluster_enabled(info: dict[str, Any]) -> bool:
    """Whether a server's ``INFO cluster`` says it is a node of a cluster."""
    return str(info.get("cluster_enabled", 0)) == "1"


def redis_client(settings: BaseSettings) -> Any:
    """A ``redis.Redis``, or a ``RedisCluster`` when ``REDIS_URL`` names a node of a cluster."""
    url, timeout = settings.get("REDIS_URL"), settings.getfloat("CRAWLER_REDIS_TIMEOUT")
    # No retries with sleeps inside redis-py: the link tries again, without blocking anyone.
    options: dict[str, Any] = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
    single = redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0), health_check_interval=30, **options)
    mode = cluster_mode(settings)
    if mode == "off" or mode == "auto" and not cluster_enabled(single.info("cluster")):
        return single
    single.close()
    return RedisCluster.from_url(url, retry=Retry(NoBackoff(), 0), **options)


async def async_redis_client(settings: BaseSettings, url: str) -> Any:
    """The asyncio client of ``url`` (the API's), a cluster's when ``redis_client`` would make one."""
    timeout = settings.getfloat("CRAWLER_REDIS_TIMEOUT")
    options: dict[str, Any] = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
    single = redis.asyncio.Redis.from_url(url, **options)
    mode = cluster_mode(settings)
    if mode == "off" or mode == "auto" and not cluster_enabled(await single.info("cluster")):
        return single
    await single.aclose()
    return redis.asyncio.RedisCluster.from_url(url, **options)


class CrawlRedis:
    """One process's connection to a shared crawl: one client, one link, one store."""

    def __init__(self, settings: BaseSettings, crawl: str, config: FrontierConfig):
        self.client = redis_client(settings)
        self.prefix = crawl_prefix(settings, crawl)
        shards = agreed_count(self.client, f"{self.prefix}:shards", settings.getint("CRAWLER_REDIS_SHARDS"))
        self.store = FrontierStore(self.client, self.prefix, config, shards=shards)
        self.link = RedisLink(self.client)
        """Started off the reactor by the scheduler of a crawl process; at once until then."""

    def key(self, *parts: str) -> str:
        return self.store.key(*parts)

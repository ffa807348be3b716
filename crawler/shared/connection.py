"""The crawl's Redis: whether one is configured, the client, and the key prefix of the crawl.

Processes started with the same ``REDIS_URL`` and the same crawl id share one frontier. The
crawl id is ``-a crawl=NAME`` (or ``CRAWLER_CRAWL_ID``); by default it is the spider's name and
a digest of its seeds, so that the same command started N times joins one crawl and crawls of
other seeds never see each other's keys.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Any
from weakref import WeakKeyDictionary

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings

from crawler.politeness.limiter import policy_config
from crawler.politeness.policy import DomainState, Policy
from crawler.shared.link import RedisLink
from crawler.shared.store import FrontierConfig, SharedFrontier

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def redis_enabled(settings: BaseSettings) -> bool:
    return bool(settings.get("REDIS_URL"))


def redis_client(settings: BaseSettings) -> redis.Redis:
    return redis.Redis.from_url(
        settings.get("REDIS_URL"),
        socket_timeout=settings.getfloat("CRAWLER_REDIS_TIMEOUT"),
        socket_connect_timeout=settings.getfloat("CRAWLER_REDIS_TIMEOUT"),
        # No retries with sleeps inside redis-py: the link tries again, without blocking anyone.
        retry=Retry(NoBackoff(), 0),
        health_check_interval=30,
    )


def crawl_id(spider_name: str, seeds: Iterable[str], explicit: str | None = None) -> str:
    if explicit:
        return _UNSAFE.sub("_", explicit)
    digest = hashlib.sha1("\n".join(sorted(seeds)).encode()).hexdigest()[:12]
    return f"{spider_name}-{digest}"


def crawl_prefix(settings: BaseSettings, crawl: str) -> str:
    # The crawl id in braces is a Redis Cluster hash tag: every key of the crawl in one slot.
    return f"{settings['BOT_NAME']}:{{{crawl}}}"


def frontier_config(settings: BaseSettings) -> FrontierConfig:
    policy = Policy(policy_config(settings))
    return FrontierConfig(
        default_delay=policy.effective_delay(DomainState()),
        default_concurrency=policy.concurrency(DomainState()),
        robots=settings.getbool("ROBOTSTXT_OBEY"),
        lease_seconds=settings.getfloat("CRAWLER_LEASE_SECONDS"),
        max_deliveries=settings.getint("CRAWLER_MAX_DELIVERIES"),
    )


class SharedServices:
    """One client, one link and one frontier per crawler."""

    def __init__(self, settings: BaseSettings, crawl: str):
        self.client = redis_client(settings)
        self.crawl = crawl
        self.prefix = crawl_prefix(settings, crawl)
        self.frontier = SharedFrontier(self.client, self.prefix, frontier_config(settings))
        self.link = RedisLink(self.client)
        """Started off the reactor by the scheduler of a crawl process; at once until then."""

    def key(self, *parts: str) -> str:
        return self.frontier.key(*parts)


_services: WeakKeyDictionary[Crawler, SharedServices] = WeakKeyDictionary()


def shared_services(crawler: Crawler, crawl: str | None = None) -> SharedServices | None:
    """The crawl's shared services, or None without ``REDIS_URL``. The first call names the
    crawl, or takes the id of the crawler's spider."""
    if not redis_enabled(crawler.settings):
        return None
    services = _services.get(crawler)
    if services is None:
        if crawl is None:
            spider: Any = crawler.spider
            assert spider is not None, "the shared services need the crawl id"
            crawl = spider.crawl_id
        services = _services[crawler] = SharedServices(crawler.settings, crawl)
    return services

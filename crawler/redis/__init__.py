"""The crawl's Redis, for crawls shared by several processes (``REDIS_URL``): the connection and
the key prefix of a crawl, the I/O thread every command goes through, the script through which
every process changes the crawl's state (queues, slots, leases, seen marks), and the reaper of
crawls whose workers all died. The concepts built on it (the frontier's queue, the limiter, the
robots.txt cache, the seen filters, the scope) each keep their Redis module beside their local one.

The switch between the two is here, where importing it loads nothing of redis-py: a crawl that
is not shared never loads it (some 50 ms of CPU at every start)."""

from __future__ import annotations

from scrapy.settings import BaseSettings


def redis_enabled(settings: BaseSettings) -> bool:
    """Whether the crawl is shared through Redis: the one switch between the local components
    and the Redis ones."""
    return bool(settings.get("REDIS_URL"))

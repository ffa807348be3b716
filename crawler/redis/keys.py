"""Keys of the crawl in Redis: the prefix of a crawl's keys, the crawls a server holds, and
deleting keys by pattern."""

from __future__ import annotations

from typing import Any

import redis
from scrapy.settings import BaseSettings


def crawl_prefix(settings: BaseSettings, crawl: str) -> str:
    # The crawl id in braces is a Redis Cluster hash tag: the crawl's own keys in one slot (its
    # frontier's shards each have theirs, ``shards.py``).
    return f"{settings['BOT_NAME']}:{{{crawl}}}"


def crawls_in(client: redis.Redis, settings: BaseSettings) -> list[str]:
    """The ids of the shared crawls whose keys ``client``'s server (every master of a cluster)
    holds: those with domains in a shard of their frontier (``crawler:{CRAWL:s7}:domains``)."""
    keys = client.scan_iter(match=crawl_prefix(settings, "*:s[0-9]*") + ":domains", count=1000)
    return sorted({as_text(key).partition("{")[2].rpartition("}")[0].rpartition(":s")[0] for key in keys})


def as_text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def delete_matching(client: redis.Redis, pattern: str, keep: frozenset[bytes] | set[bytes] = frozenset()) -> int:
    """Delete the keys matching ``pattern`` (SCAN, never KEYS; on every master of a cluster) but
    those in ``keep``; the number deleted."""
    deleted, batch = 0, []
    for key in client.scan_iter(match=pattern, count=1000):
        if key in keep:
            continue
        batch.append(key)
        if len(batch) == 500:
            deleted += client.delete(*batch)
            batch = []
    return deleted + (client.delete(*batch) if batch else 0)

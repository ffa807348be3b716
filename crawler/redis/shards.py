"""A shared crawl's frontier split into a fixed number of shards, each under a hash tag of its
own (``crawler:{CRAWL:s7.N}``), so that a Redis Cluster spreads one crawl over every master. A
domain belongs to one shard for the crawl's life (a stable hash of its name): its queue, state,
slots, delayed retries and seen marks, with the shard's part of the crawl-wide structures (ready
index, leases, counters), lie in one slot, so each call of the frontier script stays atomic.

The count is fixed when the crawl's first worker starts (``CRAWLER_REDIS_SHARDS``) and recorded
in the crawl's ``shards`` key, which later workers read: every process routes alike."""

from __future__ import annotations

import itertools
import zlib
from typing import Any

from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from crawler.redis.keys import as_text


def shard_prefixes(prefix: str, count: int) -> list[str]:
    """The key prefixes of a crawl's shards: its prefix's hash tag with the shard's number, and
    a suffix that puts shard ``i`` in the ``i``-th of ``count`` equal ranges of the cluster's
    slots. A cluster gives each master ranges of slots, so the shards spread over every master
    as evenly as the slots do (hashes alone could leave a master without any)."""
    if not prefix.endswith("}"):
        raise ValueError(f"a crawl's key prefix ends with its hash tag, not {prefix!r}")
    return [f"{prefix[:-1]}:{_spread_tag(prefix, index, count)}}}" for index in range(count)]


def _spread_tag(prefix: str, index: int, count: int) -> str:
    for attempt in itertools.count():
        tag = f"s{index}" if attempt == 0 else f"s{index}.{attempt}"
        if key_slot(f"{prefix[:-1]}:{tag}}}".encode()) * count // REDIS_CLUSTER_HASH_SLOTS == index:
            return tag
    raise AssertionError("unreachable")


def shard_pattern(prefix: str) -> str:
    """A SCAN pattern matching every key of the crawl's shards."""
    return f"{prefix[:-1]}:s[0-9]*}}:*"


def shard_index(domain: str, count: int) -> int:
    """The shard of a domain: CRC-32 of its name (the same in every process, unlike ``hash``)."""
    return zlib.crc32(domain.encode()) % count


def agreed_count(client: Any, key: str, wanted: int) -> int:
    """The crawl's shard count: the one recorded at ``key``, or ``wanted``, recorded now."""
    if wanted < 1:
        raise ValueError(f"CRAWLER_REDIS_SHARDS must be at least 1, not {wanted}")
    client.set(key, wanted, nx=True)
    return recorded_count(client, key, wanted)


def recorded_count(client: Any, key: str, default: int) -> int:
    """The shard count recorded at ``key`` (read only: tools that look at a crawl), else ``default``."""
    recorded = client.get(key)
    return int(as_text(recorded)) if recorded is not None else default

"""The frontier's shards (pure: key names and slots): a domain's keys and its requests' seen
marks in one Redis Cluster slot, the shards of one crawl in slots of their own."""

from __future__ import annotations

import fnmatch

import redis
from redis.crc import key_slot

from crawler.redis.shards import shard_index, shard_pattern, shard_prefixes
from crawler.redis.store import FrontierStore


def test_the_keys_of_a_domain_and_its_seen_marks_share_one_slot() -> None:
    frontier = FrontierStore(redis.Redis(), "crawler:{c}", shards=16)  # no command is sent
    for domain in ("a.example", "b.example:8080", "xn--bcher-kva.example"):
        keys = [
            frontier.domain_key(domain),
            frontier.domain_part(domain, "q", domain, "0"),
            frontier.domain_part(domain, "seen", "7"),
            f"{frontier.shard_of(domain)}:ready",
            f"{frontier.shard_of(domain)}:leases",
        ]
        assert len({key_slot(key.encode()) for key in keys}) == 1, keys


def test_the_shards_of_a_crawl_lie_in_slots_of_their_own_not_the_crawls() -> None:
    prefixes = shard_prefixes("crawler:{c}", 32)
    slots = {key_slot(f"{prefix}:ready".encode()) for prefix in prefixes}
    assert len(slots) == 32
    assert key_slot(b"crawler:{c}:born") not in slots


def test_a_domain_belongs_to_the_same_shard_in_every_process() -> None:
    # CRC-32, not Python's salted hash(): a fixed value a process started elsewhere computes too.
    assert shard_index("a.example", 16) == 0xB26DB5CC % 16 == 12
    indexes = {shard_index(f"site-{n}.example", 16) for n in range(200)}
    assert indexes == set(range(16))  # 200 domains reach every shard


def test_the_shard_pattern_matches_shard_keys_only() -> None:
    pattern = shard_pattern("crawler:{c}")
    assert fnmatch.fnmatchcase("crawler:{c:s7}:ready", pattern)
    assert fnmatch.fnmatchcase("crawler:{c:s15}:q:a.example:0", pattern)
    assert not fnmatch.fnmatchcase("crawler:{c}:born", pattern)
    assert not fnmatch.fnmatchcase("crawler:{cc:s1}:ready", pattern)


def test_shard_n_lies_in_the_nth_range_of_slots_so_shards_spread_over_every_master() -> None:
    for count in (3, 16, 32):
        prefixes = shard_prefixes("crawler:{some-crawl}", count)
        ranges = [key_slot(f"{prefix}:ready".encode()) * count // 16384 for prefix in prefixes]
        assert ranges == list(range(count))

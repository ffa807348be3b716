"""Backpressure on discovered URLs: each site's token bucket, in the process (on a clock of the
test's) and in Redis (on Redis's clock, with rates that make its answers exact); a page's new
URLs held back lowest priority first."""

from __future__ import annotations

import asyncio
import uuid

import pytest
import redis
from scrapy import Request
from scrapy.utils.test import get_crawler

from crawler.ingestion.rate import TokenBuckets
from crawler.ingestion.rate_redis import RedisTokenBuckets
from crawler.redis.keys import delete_matching
from crawler.redis.link import RedisLink
from crawler.spiders.backpressure import Backpressure


def test_a_site_adds_its_burst_at_once_then_its_rate_a_second() -> None:
    buckets = TokenBuckets(rate=10, burst=30)
    assert buckets.take_at("a.test", 25, now=100.0) == 25
    assert buckets.take_at("a.test", 25, now=100.0) == 5
    assert buckets.take_at("a.test", 25, now=100.5) == 5  # half a second: 5 more
    assert buckets.take_at("b.test", 25, now=100.5) == 25  # each site its own
    assert buckets.take_at("a.test", 100, now=200.0) == 30  # never more than the burst
    assert buckets.take_at("a.test", 1, now=200.0625) == 0  # part of a URL is none
    assert buckets.take_at("a.test", 1, now=200.125) == 1


def test_the_clock_is_read_for_each_take() -> None:
    now = [0.0]
    buckets = TokenBuckets(rate=1, burst=2, clock=lambda: now[0])
    assert asyncio.run(buckets.take("a.test", 5)) == 2
    now[0] = 3.0
    assert asyncio.run(buckets.take("a.test", 5)) == 2


@pytest.mark.redis
def test_the_shared_bucket_is_the_same_bucket_for_every_process(redis_client: redis.Redis) -> None:
    prefix = f"test-ingest-{uuid.uuid4().hex}"
    try:
        # Two processes' links: what one took, the other cannot take.
        slow = [RedisTokenBuckets(RedisLink(redis_client), prefix, rate=0.001, burst=5) for _ in range(2)]
        assert asyncio.run(slow[0].take("a.test", 3)) == 3
        assert asyncio.run(slow[1].take("a.test", 3)) == 2
        assert asyncio.run(slow[0].take("a.test", 3)) == 0
        assert asyncio.run(slow[1].take("b.test", 3)) == 3
        # A rate so high that any time between two calls fills the bucket again.
        fast = RedisTokenBuckets(RedisLink(redis_client), prefix, rate=1e9, burst=5)
        assert asyncio.run(fast.take("c.test", 9)) == 5
        assert asyncio.run(fast.take("c.test", 9)) == 5
        assert 0 < redis_client.ttl(f"{prefix}:c.test") <= 2  # gone once the bucket is full again
    finally:
        delete_matching(redis_client, f"{prefix}:*")


def test_a_pages_lowest_priorities_are_held_back_first() -> None:
    crawler = get_crawler()
    held = Backpressure()
    held.crawler = crawler
    held.ingest_rate, held.frontier_counts, held.frontier_cap = TokenBuckets(rate=0.001, burst=3), None, 0
    requests = [
        Request(f"http://a.test/{n}", priority=priority) for n, priority in enumerate([100, 300, 200, 300, 200])
    ]
    admitted, dropped = asyncio.run(held.admitted("http://a.test/", requests))
    assert [request.url for request in admitted] == ["http://a.test/1", "http://a.test/3", "http://a.test/2"]
    assert [request.url for request, _ in dropped] == ["http://a.test/4", "http://a.test/0"]
    assert crawler.stats.get_value("backpressure/skipped/rate") == 2

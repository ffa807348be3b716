"""The Bloom seen filter: its arithmetic (pure), and the filter in a real Redis, with SETBIT
and with the RedisBloom module (a throwaway server that loads it)."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterator

import pytest
import redis
from scrapy import Request
from scrapy.utils.test import get_crawler

from crawler.redis.keys import delete_matching
from crawler.redis.store import FrontierConfig, FrontierStore
from crawler.seen.bloom import BloomSeenFilter
from crawler.seen.bloom_shape import MAX_BLOCK_BITS, BloomShape
from crawler.seen.filter import has_bloom_module
from tests.conftest import REDIS_URL
from tests.helpers import Database, crawl
from tests.testweb import TestWeb
from tests.throwaway_redis import ThrowawayRedis, redisbloom_module


def _fingerprint(n: int) -> bytes:
    return hashlib.sha1(str(n).encode()).digest()


@pytest.mark.parametrize(
    ("capacity", "error_rate", "bits_per_item", "hashes"),
    [(1_000, 0.01, 9.59, 7), (1_000_000, 0.001, 14.38, 10), (1_000_000, 1e-6, 28.76, 20)],
)
def test_the_shape_follows_the_textbook_formulas(
    capacity: int, error_rate: float, bits_per_item: float, hashes: int
) -> None:
    shape = BloomShape.for_capacity(capacity, error_rate)
    assert shape.bits * shape.blocks / capacity == pytest.approx(bits_per_item, abs=0.01)
    assert shape.hashes == hashes
    assert shape.expected_error_rate(capacity) == pytest.approx(error_rate, rel=0.05)


def test_a_billion_requests_at_one_in_a_million_take_about_3_6_bytes_each_in_blocks_of_16_mib() -> None:
    shape = BloomShape.for_capacity(1_000_000_000, 1e-6)
    assert shape.bits <= MAX_BLOCK_BITS
    assert shape.blocks == math.ceil(shape.bits * shape.blocks / MAX_BLOCK_BITS)
    assert shape.bytes_per_request == pytest.approx(3.59, abs=0.01)


def test_positions_are_stable_in_range_and_spread_over_blocks() -> None:
    shape = BloomShape.for_capacity(10_000_000, 1e-4, max_block_bits=1 << 20)
    assert shape.blocks > 100
    blocks = set()
    for n in range(2_000):
        block, offsets = shape.positions(_fingerprint(n))
        assert (block, offsets) == shape.positions(_fingerprint(n))
        assert 0 <= block < shape.blocks
        assert len(offsets) == shape.hashes and all(0 <= o < shape.bits for o in offsets)
        assert len(set(offsets)) >= shape.hashes - 1
        blocks.add(block)
    assert len(blocks) > shape.blocks * 0.9


@pytest.mark.parametrize(("capacity", "error_rate"), [(0, 0.01), (10, 0.0), (10, 1.0)])
def test_impossible_shapes_are_refused(capacity: int, error_rate: float) -> None:
    with pytest.raises(ValueError):
        BloomShape.for_capacity(capacity, error_rate)


def test_a_short_fingerprint_is_refused() -> None:
    with pytest.raises(ValueError):
        BloomShape.for_capacity(10, 0.01).positions(b"short")


def _requests(start: int, count: int) -> Iterator[Request]:
    for n in range(start, start + count):
        yield Request(f"https://site{n % 97}.example/page/{n}")


def _false_positive_rate(seen: BloomSeenFilter, inserted: int, probes: int) -> float:
    for request in _requests(0, inserted):
        seen.request_seen(request)
    for request in _requests(0, inserted):
        assert seen.contains(request) and seen.request_seen(request)  # never a false negative
    return sum(seen.contains(r) for r in _requests(10**9, probes)) / probes


def _filter(client: redis.Redis, key: str, capacity: int, error_rate: float, *, use_module: bool) -> BloomSeenFilter:
    crawler = get_crawler()
    shape = BloomShape.for_capacity(capacity, error_rate)
    return BloomSeenFilter(client, key, crawler.request_fingerprinter, shape, use_module=use_module)


def test_setbit_filter_marks_requests_and_meets_its_error_rate(redis_client: redis.Redis, crawl_name: str) -> None:
    seen = _filter(redis_client, f"crawler:{crawl_name}:seen", 2_000, 0.01, use_module=False)
    request = Request("https://example.com/a")
    assert not seen.request_seen(request)
    assert seen.request_seen(Request("https://example.com/a"))
    rate = _false_positive_rate(seen, 2_000, 2_000)
    assert rate < 0.02  # 0.01 configured: 20 of 2,000 expected, 40 is over four standard deviations away
    seen.clear()
    assert not redis_client.keys(f"crawler:{crawl_name}:seen*")


@pytest.fixture(scope="module")
def bloom_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[redis.Redis]:
    server = ThrowawayRedis(tmp_path_factory.mktemp("bloom-redis"), persistent=False, modules=[redisbloom_module()])
    server.start()
    client = redis.Redis.from_url(server.url)
    yield client
    client.close()
    server.stop()


@pytest.mark.integration
def test_the_module_is_detected_only_where_it_is_loaded(bloom_redis: redis.Redis, redis_client: redis.Redis) -> None:
    assert has_bloom_module(bloom_redis)
    assert not has_bloom_module(redis_client)


@pytest.mark.integration
def test_redisbloom_filter_marks_requests_and_meets_its_error_rate(bloom_redis: redis.Redis) -> None:
    seen = _filter(bloom_redis, "crawler:bloomtest:seen", 2_000, 0.01, use_module=True)
    assert bloom_redis.type("crawler:bloomtest:seen") == b"MBbloom--"
    rate = _false_positive_rate(seen, 2_000, 2_000)
    assert rate < 0.02
    seen.clear()
    assert not bloom_redis.exists("crawler:bloomtest:seen")


@pytest.mark.integration
def test_a_redisbloom_filter_of_another_shape_is_not_reserved_twice(bloom_redis: redis.Redis) -> None:
    first = _filter(bloom_redis, "crawler:twice:seen", 1_000, 0.01, use_module=True)
    _filter(bloom_redis, "crawler:twice:seen", 1_000, 0.01, use_module=True)  # joining: no error
    assert not first.request_seen(Request("https://example.com/"))
    first.clear()


def test_the_frontier_queues_a_request_once_through_the_bloom_filter(
    redis_client: redis.Redis, crawl_name: str
) -> None:
    prefix = f"crawler:{{{crawl_name}}}"
    frontier = FrontierStore(redis_client, prefix, FrontierConfig(robots=False))
    seen = _filter(redis_client, f"{prefix}:seen", 1_000, 0.001, use_module=False)
    request = Request("https://example.com/page")
    marker = seen.marker(request)
    assert frontier.push("example.com", 0, "https://example.com/page\t{}", seen=marker)
    assert not frontier.push("example.com", 0, "https://example.com/page\t{}", seen=marker)
    assert seen.contains(request) == 1 and frontier.sizes().queued == 1
    delete_matching(redis_client, f"{prefix}:*")


@pytest.mark.integration
def test_a_shared_crawl_with_the_bloom_filter_crawls_every_page_once(
    web: TestWeb, database: Database, crawl_name: str
) -> None:
    web.clear()
    settings = {
        "REDIS_URL": REDIS_URL,
        "CRAWLER_CRAWL_ID": crawl_name,
        "CRAWLER_IDLE_CLOSE_SECONDS": "0.5",
        "CRAWLER_SEEN_FILTER": "bloom",
        "CRAWLER_BLOOM_CAPACITY": "10000",
    }
    crawl("links", database, url=web.url("links"), settings=settings)
    log = web.log("links")
    answered = Counter(entry.path for entry in log if entry.status < 500)  # a 5xx is retried
    assert [path for path, n in answered.items() if n > 1] == []
    pages = database.pages()
    covered = {
        url.removeprefix(web.base("links")) for row in pages.values() for url in (row["url"], row["final_url"]) if url
    }
    assert len(pages) >= 10 and covered >= {entry.path for entry in log if entry.status == 200} - {"/robots.txt"}

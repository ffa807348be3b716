"""robots.txt files cached in the process and, for a shared crawl, in Redis for every process."""

from __future__ import annotations

import redis
from scrapy import Spider
from scrapy.utils.test import get_crawler

from crawler.redis.link import RedisLink
from crawler.redis.store import FrontierConfig, FrontierStore
from crawler.robots.cache_local import RobotsCache
from crawler.robots.cache_redis import RedisRobotsCache
from crawler.robots.rules import RobotsRules
from crawler.robots.status import unreachable
from crawler.services import CrawlServices
from tests.helpers import crawl_keys, project_settings


def test_an_answer_is_kept_for_the_ttl_and_a_failure_is_tried_again_soon() -> None:
    cache = RobotsCache(ttl=3600.0, retry_after=60.0)
    rules = RobotsRules.parse(b"User-agent: *\nDisallow: /x", "crawler")
    for status, lifetime in [(200, 3600.0), (404, 3600.0), (None, 60.0), (503, 60.0), (301, 60.0)]:
        entry = cache.put("a.example", cache.entry(rules, status, b"", 100.0))
        assert entry.expires_at == 100.0 + lifetime, status
    assert cache.get("a.example", 159.9) is not None and cache.get("a.example", 160.0) is None
    cache.forget("a.example")
    assert cache.get("a.example", 100.0) is None


def test_every_process_reads_a_file_another_fetched_with_its_verdict(
    redis_client: redis.Redis, crawl_name: str
) -> None:
    robots = CrawlServices.of(get_crawler(Spider, project_settings())).make_robots()
    store = FrontierStore(redis_client, crawl_keys(crawl_name), FrontierConfig())
    local = RobotsCache(ttl=3600.0, retry_after=60.0)
    one = RedisRobotsCache(store, RedisLink(redis_client), robots.rules, RobotsCache(ttl=3600.0, retry_after=60.0))
    two = RedisRobotsCache(store, RedisLink(redis_client), robots.rules, local)
    body = b"User-agent: *\nDisallow: /private"
    one.share("parsed.example", local.entry(robots.rules(200, body), 200, body, 100.0))
    # No answer at all: the rules say why, and that is what the other processes must read too.
    refused = unreachable("crawler", "connection refused while fetching robots.txt")
    one.share("down.example:8080", local.entry(refused, None, b"", 100.0))
    loaded: list[bool] = []
    two.load(["parsed.example", "down.example:8080", "unknown.example"], done=lambda: loaded.append(True))
    assert loaded == [True]
    parsed = local.get("parsed.example", 150.0)
    assert parsed is not None and parsed.status == 200
    assert parsed.rules.decide("http://parsed.example/private/1").rule == "Disallow: /private"
    down = local.get("down.example:8080", 150.0)
    assert down is not None and down.status is None
    decision = down.rules.decide("http://down.example:8080/page")
    assert not decision.allowed and decision.rule == refused.reason
    assert local.get("unknown.example", 150.0) is None
    assert local.get("down.example:8080", 160.0) is None  # tried again after CRAWLER_ROBOTS_RETRY_SECONDS

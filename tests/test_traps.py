"""Trap rules: what a URL's shape refuses, the pattern it belongs to, and the counts of each
site's patterns, in the process and shared through Redis."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from crawler.redis.keys import delete_matching
from crawler.redis.link import RedisLink
from crawler.traps.guard import TrapGuard
from crawler.traps.patterns_local import PatternCounts
from crawler.traps.patterns_redis import RedisPatternCounts
from crawler.traps.url_shapes import UrlRules, repeated_run, url_pattern

RULES = UrlRules(max_segment_repeats=2, max_path_segments=30, max_query_params=20)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://a.test/guide/guide/intro", None),
        ("http://a.test/guide/guide/guide/intro", "trap: path segments 'guide' repeat 3 times in a row (more than 2)"),
        ("http://a.test/a/b/a/b/a/b/", "trap: path segments 'a/b' repeat 3 times in a row (more than 2)"),
        ("http://a.test/x/a/b/c/a/b/c/a/b/c", "trap: path segments 'a/b/c' repeat 3 times in a row (more than 2)"),
        ("http://a.test/a/x/a/y/a/z/a", None),  # not in a row
        ("http://a.test/a//a//a", "trap: path segments 'a' repeat 3 times in a row (more than 2)"),
        ("http://a.test/" + "/".join(f"s{n}" for n in range(30)), None),
        ("http://a.test/" + "/".join(f"s{n}" for n in range(31)), "trap: 31 path segments (more than 30)"),
        ("http://a.test/?" + "&".join(f"p{n}=1" for n in range(20)), None),
        ("http://a.test/?" + "&".join(f"p{n}=1" for n in range(21)), "trap: 21 query parameters (more than 20)"),
    ],
)
def test_the_shape_of_a_url_refuses_it(url: str, reason: str | None) -> None:
    assert RULES.refusal(url) == reason


def test_each_rule_is_off_at_zero() -> None:
    off = UrlRules(0, 0, 0)
    assert off.refusal("http://a.test/" + "a/" * 50 + "?" + "&".join(f"p{n}=1" for n in range(50))) is None


@given(st.lists(st.sampled_from("abc"), max_size=12))
def test_the_longest_run_is_found_as_a_plain_search_finds_it(segments: list[str]) -> None:
    run, times = repeated_run(segments)
    expected = max(
        (
            count
            for length in (1, 2, 3)
            for start in range(len(segments) - length + 1)
            for count in range(1, len(segments) // length + 1)
            if segments[start : start + count * length] == segments[start : start + length] * count
        ),
        default=0,
    )
    assert times == expected
    assert not segments or "/".join(segments).find("/".join(run * times)) >= 0


@pytest.mark.parametrize(
    ("url", "pattern"),
    [
        ("http://a.test/s/a81f9c/about", "/s/*"),
        ("http://a.test/s/c2d9ee/news/1", "/s/*"),
        ("http://a.test/calendar/2031/05", "/calendar/*"),
        ("http://a.test/list?page=7&sort=asc", "/list?page=*&sort=*"),
        ("http://a.test/library/os.html?lang=en", "/library/os.html?lang=*"),
        ("http://a.test/library/os.html", None),  # one URL: nothing to count
        ("http://a.test/", None),
        ("http://a.test/t/" + "x" * 30 + "/y", "/t/*"),
    ],
)
def test_urls_a_site_generates_share_a_pattern(url: str, pattern: str | None) -> None:
    assert url_pattern(url) == pattern


def test_a_pattern_that_gives_more_twins_than_pages_is_not_followed_past_its_limit() -> None:
    counts = PatternCounts(max_urls=0, stop_after_twins=3)
    for _ in range(2):
        counts.judged("a.test", "/s/*", twin=True)
    assert counts.refusal("a.test", "/s/*") is None
    counts.judged("a.test", "/s/*", twin=True)
    assert counts.refusal("a.test", "/s/*") == "trap: /s/* gave 3 twins and 0 other pages"
    assert counts.refusal("b.test", "/s/*") is None
    for _ in range(3):
        counts.judged("a.test", "/s/*", twin=False)
    assert counts.refusal("a.test", "/s/*") is None  # as many pages of its own: a site's section


def test_a_pattern_queues_at_most_so_many_urls_per_site() -> None:
    counts = PatternCounts(max_urls=2, stop_after_twins=0)
    counts.queued("a.test", "/calendar/*")
    assert counts.refusal("a.test", "/calendar/*") is None
    counts.queued("a.test", "/calendar/*")
    assert counts.refusal("a.test", "/calendar/*") == "trap: /calendar/* queued 2 URLs already (at most 2)"
    assert counts.refusal("www.b.test", "/calendar/*") is None


def test_the_guard_judges_by_shape_then_by_the_pattern_on_the_site() -> None:
    guard = TrapGuard(RULES, PatternCounts(max_urls=1, stop_after_twins=0))
    assert guard.refusal("http://a.test/a/a/a") is not None
    guard.queued("http://a.test/calendar/2031/01")
    assert guard.refusal("http://www.a.test/calendar/2031/02") == "trap: /calendar/* queued 1 URLs already (at most 1)"
    assert guard.refusal("http://b.test/calendar/2031/02") is None


@pytest.fixture
def traps_key(redis_client: redis.Redis) -> Iterator[str]:
    prefix = f"test-traps-{uuid.uuid4().hex[:8]}"
    yield prefix
    delete_matching(redis_client, f"{prefix}:*")


def test_processes_sharing_the_counts_see_each_others(redis_client: redis.Redis, traps_key: str) -> None:
    first, second = (RedisPatternCounts(0, 3, RedisLink(redis_client), traps_key) for _ in range(2))
    first.judged("a.test", "/s/*", twin=True)
    first.judged("a.test", "/s/*", twin=True)
    second.judged("a.test", "/s/*", twin=True)  # its answer brings the others' count
    assert second.refusal("a.test", "/s/*") == "trap: /s/* gave 3 twins and 0 other pages"
    assert first.refusal("a.test", "/s/*") is None  # until its next answer
    first.queued("a.test", "/s/*")
    first.judged("a.test", "/s/*", twin=False)
    assert first.counts["a.test", "/s/*"].twins == 3
    assert redis_client.hgetall(f"{traps_key}:a.test") == {b"t:/s/*": b"3", b"q:/s/*": b"1", b"p:/s/*": b"1"}

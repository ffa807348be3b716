"""Seeds, scope, priorities and sitemap discovery: pure logic."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.frontier.priority import HIGH, LOW, MEDIUM, priority_level, request_priority
from crawler.frontier.seeds import parse_seeds
from crawler.identity import host_of, site_of
from crawler.redis.keys import delete_matching
from crawler.redis.link import RedisLink
from crawler.scope.scope_local import Scope
from crawler.scope.scope_redis import RedisScope
from crawler.sitemaps.discovery import Discovery, Phase, SeedKind, fallback_sitemap_urls, robots_url, seed_kind
from tests.conftest import REDIS_URL


def test_seeds_from_argument_and_file(tmp_path) -> None:
    path = tmp_path / "seeds.txt"
    path.write_text("# comment\nhttps://b.example/\n\nc.example\nhttps://a.example/\n")
    assert parse_seeds("https://a.example/, example.com/docs?x=1", str(path)) == [
        "https://a.example/",
        "https://example.com/docs?x=1",
        "https://b.example/",
        "https://c.example/",
    ]
    with pytest.raises(ValueError, match="no seed"):
        parse_seeds(" , ")


def test_scope() -> None:
    site = Scope("site", ["https://www.example.com/"])
    assert "https://example.com/x" in site and "http://www.example.com/y" in site
    assert "https://docs.example.com/" not in site and "https://example.org/" not in site
    host = Scope("host", ["https://www.example.com/"])
    assert "https://example.com/x" not in host and "https://www.example.com/x" in host
    assert "https://anything.test/" in Scope("any")
    assert site_of("http://user@WWW.Example.com:8080/x") == "example.com:8080"
    with pytest.raises(ValueError, match="CRAWLER_SCOPE"):
        Scope("planet")


@pytest.mark.parametrize("scope", ["in-process", pytest.param("redis", marks=pytest.mark.redis)], indirect=True)
def test_a_seed_through_the_api_widens_the_scope_without_being_trusted(scope: Scope) -> None:
    scope.add_seed("https://www.trusted.example/")
    scope.add_seed("https://api.example/", trusted=False)
    scope.add_seed("https://both.example/", trusted=False)
    scope.add_seed("https://both.example/")
    seen_by_another_process = _another_process(scope)
    for view in (scope, seen_by_another_process):
        assert all(
            url in view for url in ("https://trusted.example/x", "https://api.example/y", "https://both.example/")
        )
        assert view.trusted("https://trusted.example/x") and view.trusted("https://both.example/z")
        assert not view.trusted("https://api.example/y") and not view.trusted("https://other.example/")


@pytest.fixture
def scope(request: pytest.FixtureRequest) -> Iterator[Scope]:
    if request.param == "in-process":
        yield Scope("site")
        return
    client = redis.Redis.from_url(REDIS_URL)
    key = f"crawler:{{test-scope-{uuid.uuid4().hex}}}:scope"
    try:
        yield RedisScope("site", RedisLink(client), key)
    finally:
        delete_matching(client, f"{key}*")
        client.close()


def _another_process(scope: Scope) -> Scope:
    """The same crawl's scope as another process sees it (its own, for a scope in one process)."""
    if not isinstance(scope, RedisScope):
        return scope
    other = RedisScope("site", RedisLink(scope.seeds.link.client), scope.seeds.key)
    other.refresh()  # the link is not started: at once
    return other


@pytest.mark.parametrize(
    ("url", "depth", "seed", "level"),
    [
        ("https://e.com/deep/page", 7, True, HIGH),
        ("https://e.com/a/b", 2, False, HIGH),
        ("https://e.com/", 6, False, HIGH),
        ("https://e.com/guide/intro", 3, False, MEDIUM),
        ("https://e.com/blog/page/4", 3, False, LOW),
        ("https://e.com/list?page=9", 4, False, LOW),
        ("https://e.com/2023/05/post", 3, False, LOW),
        ("https://e.com/guide/intro", 6, False, LOW),
    ],
)
def test_priority_levels(url: str, depth: int, seed: bool, level: int) -> None:
    assert priority_level(url, depth, seed=seed) == level


def test_request_priority_orders_levels_then_depth() -> None:
    assert request_priority("https://e.com/a", 0, seed=True) > request_priority("https://e.com/a/b", 2)
    assert request_priority("https://e.com/a/b", 2) > request_priority("https://e.com/x/y/z", 3)
    assert request_priority("https://e.com/g/x", 3) > request_priority("https://e.com/g/x", 4)
    assert request_priority("https://e.com/g/x", 5) > request_priority("https://e.com/page/2", 3)


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("https://e.com/robots.txt", SeedKind.ROBOTS),
        ("https://e.com/sitemap.xml", SeedKind.SITEMAP),
        ("https://e.com/maps/news-sitemap-2024.xml.gz", SeedKind.SITEMAP),
        ("https://e.com/feed/pages.txt", SeedKind.SITEMAP),
        ("https://e.com/", SeedKind.PAGE),
        ("https://e.com/docs/page.html", SeedKind.PAGE),
    ],
)
def test_seed_kind(url: str, kind: SeedKind) -> None:
    assert seed_kind(url) is kind


def test_discovery_urls() -> None:
    assert robots_url("https://e.com/a/b?c") == "https://e.com/robots.txt"
    assert fallback_sitemap_urls("https://e.com/a/b", ["/sitemap.xml", "/sitemap_index.xml"]) == [
        "https://e.com/sitemap.xml",
        "https://e.com/sitemap_index.xml",
    ]


def test_discovery_phases() -> None:
    discovery = Discovery("https://e.com/")
    discovery.started("https://e.com/s1.xml")
    discovery.started("https://e.com/s2.xml")
    assert discovery.finished(0) is None  # one still pending
    assert discovery.finished(0) is Phase.FALLBACK
    discovery.started("https://e.com/sitemap.xml")
    assert discovery.finished(0) is Phase.PAGE
    assert discovery.advance() is None


def test_discovery_stops_once_a_sitemap_lists_urls() -> None:
    discovery = Discovery("https://e.com/")
    discovery.started("https://e.com/index.xml")
    discovery.started("https://e.com/child.xml")  # started by the index before it finished
    assert discovery.finished(0) is None
    assert discovery.finished(12) is None
    assert discovery.phase is Phase.ROBOTS and discovery.found == 12


AUTHORITY_PARTS = [
    "www.",
    "Example.COM",
    "h",
    ":",
    "8080",
    "@",
    "user",
    "[",
    "]",
    "::1",
    "\\",
    " ",
    "\t",
    "\n",
    "é",
    "%41",
    "\u2100",
    "\uff0f",
    "\xa0",
]
URLS = st.tuples(
    st.sampled_from(["http", "https", "HTTPS", "ftp", "", "h ttp"]),
    st.sampled_from(["://", ":/", ":", "//", ""]),
    st.lists(st.sampled_from(AUTHORITY_PARTS), max_size=6).map("".join),
    st.sampled_from(["/", "?", "#", "", " /", "\\", "/p?q#f"]),
    st.sampled_from(["", "x", "//y/", "a@b"]),
).map("".join)


@settings(max_examples=1000, deadline=None)
@given(URLS)
def test_host_of_reads_the_authority_as_urlsplit_does(url: str) -> None:
    try:
        expected = urlsplit(url).netloc.rpartition("@")[2].lower()
    except ValueError:
        with pytest.raises(ValueError):
            host_of(url)
        return
    assert host_of(url) == expected

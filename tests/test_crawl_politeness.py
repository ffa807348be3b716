"""Politeness on the local test web, asserted from the server's own request log, with the
frontier in the process and shared through Redis."""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from crawler import settings as default_settings
from tests.helpers import Database, crawl
from tests.testweb import TestWeb
from tests.testweb.far_site import PAGES, FarSite, Waits

pytestmark = pytest.mark.integration

TOLERANCE = 0.010


def _epoch(moment: datetime | str) -> float:
    moment = datetime.fromisoformat(moment) if isinstance(moment, str) else moment
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _starts(web: TestWeb, label: str) -> list[float]:
    return sorted(entry.start for entry in web.log(label))


def test_crawl_delay_spaces_every_request_including_robots_txt(
    web: TestWeb, database: Database, frontier: dict[str, str]
) -> None:
    web.clear()
    crawl("links", database, url=web.url("delayed"), settings=frontier)
    starts = _starts(web, "delayed")
    assert len(starts) == 14  # robots.txt, / and 12 pages
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert min(gaps) >= 0.3 - TOLERANCE, gaps
    assert [e.path for e in web.log("delayed")].count("/robots.txt") == 1


def test_a_slow_domain_does_not_slow_another(web: TestWeb, database: Database, frontier: dict[str, str]) -> None:
    web.clear()
    crawl("links", database, url=f"{web.url('delayed')},{web.url('fast')}", settings=frontier)
    fast, delayed = _starts(web, "fast"), _starts(web, "delayed")
    assert len(fast) == 42 and len(delayed) == 14
    # 40 pages while the delayed host has done a handful: held behind its delay, the fast host
    # would finish with it. Counted against the delayed host's own progress, not the wall's
    # seconds, which a machine busy with other work stretches.
    assert sum(1 for start in delayed if start < fast[-1]) <= len(delayed) // 2, (fast[-1] - fast[0], delayed)
    assert delayed[-1] - delayed[0] >= 12 * 0.3 - TOLERANCE


def test_429_blocks_the_domain_for_retry_after_and_nothing_is_lost(
    web: TestWeb, database: Database, frontier: dict[str, str]
) -> None:
    web.clear()
    concurrency = default_settings.CONCURRENT_REQUESTS_PER_DOMAIN
    settings = {**frontier, "CRAWLER_MIN_DELAY": "0", "CONCURRENT_REQUESTS_PER_DOMAIN": str(concurrency)}
    crawl("links", database, url=web.url("limited"), settings=settings)
    log = sorted(web.log("limited"), key=lambda e: e.start)
    refused = [e for e in log if e.status == 429]
    assert refused, "the hidden rate limit was never hit"
    # When the crawler read each 429: its request log's row of the same answer (the k-th 429 of
    # a URL on either side). The slot of a refused request is given back only once the block is
    # recorded, so at that moment only the domain's other slots can have a request on its way;
    # each may still reach the site after (written before, its bytes sent on a later turn of
    # the reactor). Nothing else reaches the site before Retry-After: 1 is out.
    base = web.base("limited")
    known: dict[str, list[float]] = {}
    for url, ended in database.query("SELECT url, ended_at FROM request_log WHERE http_status = 429 ORDER BY ended_at"):
        known.setdefault(url.removeprefix(base), []).append(_epoch(ended))
    assert {path: len(times) for path, times in known.items()} == Counter(e.path for e in refused)
    answers = {path: iter(times) for path, times in known.items()}
    for entry in refused:
        known_at = next(answers[entry.path])
        late = [e.start for e in log if known_at < e.start < entry.end + 1.0 - TOLERANCE]
        assert len(late) <= concurrency - 1, (known_at - entry.end, [start - entry.end for start in late])
    pages = database.pages()
    assert len(pages) == 1 + 40 + 1  # /, every page and the private one
    statuses = {url.removeprefix(web.base("limited")): row["status"] for url, row in pages.items()}
    assert statuses.pop("/p/0") == "duplicate"  # the home page under another URL
    assert set(statuses.values()) == {"fetched", "blocked_by_robots"}
    ((delay, floor),) = database.query(
        "SELECT adaptive_delay_seconds, adaptive_delay_floor_seconds FROM domains WHERE domain = ?",
        (web.url("limited").split("//")[1].rstrip("/"),),
    )
    assert delay > 0


def _crawl_far_site(
    tmp_path: Path, retry_after: int, waits: Waits, refusals: int = 1
) -> tuple[FarSite, list[str], str]:
    """A crawl of one process of ``FarSite`` (a shared frontier hands a domain's second page out
    only once the first has left, a Redis round trip later: the two are not on their way at
    once); the site, the paths read after its first 429 was answered and within ``retry_after``,
    and the crawl's log."""
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    with FarSite(tmp_path, "127.0.0.69", retry_after, waits, refusals) as site:
        result = crawl("links", database, url=site.url(), settings={"CRAWLER_MIN_DELAY": "0"})
    refused = [entry for entry in site.log if entry.status == 429]
    assert len(refused) == refusals, site.log
    refusal = min(refused, key=lambda entry: entry.answered_at)
    early = [
        e.path for e in site.log if refusal.answered_at < e.read_at < refusal.answered_at + retry_after - TOLERANCE
    ]
    statuses = {url.removeprefix(site.url("")): row["status"] for url, row in database.pages().items()}
    assert statuses == dict.fromkeys(("/", *PAGES), "fetched"), statuses
    return site, early, result.stderr


def test_a_request_whose_connection_was_not_ready_when_a_429_came_waits_out_the_block(tmp_path: Path) -> None:
    # /a and /b at once: one goes on the kept-alive connection and is answered 429 while the
    # other's new connection is still in its TLS handshake. When that connection is ready the
    # domain is blocked: the request is held until Retry-After is out, not written into it.
    site, early, log = _crawl_far_site(tmp_path, retry_after=2, waits=Waits(handshake=1.0))
    assert early == [], site.log
    (refused,) = (e.path for e in site.log if e.status == 429)
    assert sorted(e.path for e in site.log if e.path in PAGES) == sorted([*PAGES, refused]), site.log
    assert "'limiter/held_before_sending_count': 1" in log
    assert site.connections == 2  # the held request's connection went back to the pool and carried a page


def test_an_answer_to_a_request_on_its_way_when_a_429_came_does_not_lift_the_block(tmp_path: Path) -> None:
    # Both pages on their way; the 429 comes back first, the other page's 200 after it. That
    # 200 says nothing of the site since the 429: the refused page is asked again only once
    # Retry-After is out.
    site, early, _ = _crawl_far_site(tmp_path, retry_after=2, waits=Waits(refusal=0.2, page=0.5))
    (refusal,) = (entry for entry in site.log if entry.status == 429)
    answered_after = [e for e in site.log if e.read_at < refusal.answered_at < e.answered_at]
    assert [e.path for e in answered_after] == [p for p in PAGES if p != refusal.path], site.log
    assert early == [], site.log


def test_two_refusals_of_requests_on_their_way_at_once_are_one_refusal(tmp_path: Path) -> None:
    # Both pages on their way, both refused: the second 429 answers a request that left before
    # the first was read. The delay is raised and the domain blocked once, not twice (the second
    # Retry-After, counted from a few ms later, still holds).
    site, early, log = _crawl_far_site(tmp_path, retry_after=2, waits=Waits(refusal=0.2), refusals=2)
    refusals = [e for e in site.log if e.status == 429]
    assert all(e.read_at < min(r.answered_at for r in refusals) for e in refusals), site.log
    assert early == [], site.log
    assert "'limiter/blocking_response_count/429': 2" in log
    assert "'limiter/delay_increase_count': 1," in log and "'limiter/block_count': 1," in log
    assert "'limiter/block_again_count': 1," in log
    assert "the same refusal, whose Retry-After blocks it 2.0 s from now" in log


def test_learned_delay_is_loaded_by_the_next_run(web: TestWeb, database: Database, frontier: dict[str, str]) -> None:
    web.clear()
    crawl("links", database, url=web.url("limited"), settings=frontier)
    first = sum(1 for e in web.log("limited") if e.status == 429)
    web.clear()
    # every page due again, so that the second run asks for as much as the first
    result = crawl(
        "links",
        database,
        url=web.url("limited"),
        job_id="second",
        settings={**frontier, "CRAWLER_RECRAWL_MIN_INTERVAL": "0"},
    )
    second = sum(1 for e in web.log("limited") if e.status == 429)
    assert "Loaded learned delays of 1 domains" in result.stderr
    assert second <= max(1, first // 4), (first, second)


def test_robots_decisions_are_recorded_with_the_matched_rule(
    web: TestWeb, database: Database, frontier: dict[str, str]
) -> None:
    web.clear()
    crawl("links", database, url=web.url("fast"), settings={**frontier, "CRAWLER_ROBOTS_RECORD_ALLOWED": "True"})
    rows = database.pages()
    blocked = rows[web.url("fast", "/private/page")]
    assert (
        blocked["status"] == "blocked_by_robots" and blocked["error"] == "Forbidden by robots.txt: Disallow: /private"
    )
    decisions = database.query("SELECT url, allowed, matched_rule FROM robots_decisions")
    by_url = {url: (bool(allowed), rule) for url, allowed, rule in decisions}
    assert by_url[web.url("fast", "/private/page")] == (False, "Disallow: /private")
    assert by_url[web.url("fast", "/p/1")] == (True, "no rule matched")
    assert len(decisions) == len(rows)
    ((status, text),) = database.query("SELECT robots_status, robots_txt FROM domains")
    assert status == 200 and "Disallow: /private" in text


def test_robots_txt_server_error_disallows_everything_for_now(
    web: TestWeb, database: Database, frontier: dict[str, str]
) -> None:
    web.clear()
    crawl("links", database, url=web.url("robots-503"), settings=frontier)
    (row,) = database.pages().values()
    assert row["status"] == "blocked_by_robots" and "HTTP 503" in row["error"]
    assert [e.path for e in web.log("robots-503")] == ["/robots.txt"]


def test_robots_txt_not_found_allows_everything(web: TestWeb, database: Database, frontier: dict[str, str]) -> None:
    web.clear()
    crawl("links", database, url=web.url("robots-404"), settings=frontier)
    rows = database.pages()
    assert len(rows) == 7 and rows[web.url("robots-404", "/private/page")]["status"] == "error"  # 404 page


def test_robots_txt_stored_by_a_job_is_reused_while_valid(
    web: TestWeb, database: Database, frontier: dict[str, str]
) -> None:
    web.clear()
    crawl("links", database, url=web.url("fast"), max_pages="3", settings=frontier)
    web.clear()
    result = crawl("links", database, url=web.url("fast"), max_pages="3", job_id="again", settings=frontier)
    assert "'robotstxt/reused_stored': 1," in result.stderr
    assert "/robots.txt" not in [e.path for e in web.log("fast")]
    # Past a TTL of 1 s since the first job fetched it (two short jobs may take less than that).
    ((fetched_at,),) = database.query("SELECT robots_fetched_at FROM domains WHERE robots_fetched_at IS NOT NULL")
    time.sleep(max(0.0, _epoch(fetched_at) + 1.1 - time.time()))
    web.clear()
    crawl(
        "links",
        database,
        url=web.url("fast"),
        max_pages="3",
        job_id="expired",
        settings={**frontier, "CRAWLER_ROBOTS_TTL": "1"},
    )
    assert "/robots.txt" in [e.path for e in web.log("fast")]


def test_a_delay_following_the_latency_logs_its_moves_at_debug_only(web: TestWeb, database: Database) -> None:
    web.clear()
    settings = {"CRAWLER_LATENCY_FACTOR": "1", "CRAWLER_DEFAULT_DELAY": "0.02", "LOG_LEVEL": "DEBUG"}
    result = crawl("links", database, url=web.url("steered"), max_pages="20", settings=settings)
    moves = [line for line in result.stderr.splitlines() if "Pacing of" in line and " after success:" in line]
    # The delay follows each answer's latency (50 ms): a line each time, none of them at INFO.
    assert len(moves) >= 5 and all("] DEBUG: " in line for line in moves), moves[:3]


def test_a_crawl_without_the_robots_middleware_does_not_wait_for_robots_txt(
    web: TestWeb, database: Database, frontier: dict[str, str]
) -> None:
    web.clear()
    middlewares = {**default_settings.DOWNLOADER_MIDDLEWARES, "crawler.middlewares.robots.RobotsMiddleware": None}
    switched_off = {"DOWNLOADER_MIDDLEWARES": json.dumps(middlewares)}
    crawl("links", database, url=web.url("fast"), settings={**frontier, **switched_off}, timeout=60)
    requested = {e.path for e in web.log("fast")}
    assert "/robots.txt" not in requested
    assert "/private/page" in requested  # what robots.txt refuses: nothing read it


def _most_at_once(spans: list[tuple[float, float]]) -> int:
    """The most of these (start, end) spans that were open at one moment."""
    events = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    most = now = 0
    for _, change in events:
        now += change
        most = max(most, now)
    return most


def test_a_crawl_opening_many_hosts_fetches_no_more_robots_txt_at_once_than_its_requests(
    database: Database, frontier: dict[str, str], tmp_path
) -> None:
    hosts = 40
    with TestWeb({f"h{n}": "paced:pages=2,latency_ms=300" for n in range(hosts)}, first_address=200) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(web.url(label) + "\n" for label in web.specs))
        crawl("links", database, seeds_file=str(seeds), settings={**frontier, "CONCURRENT_REQUESTS": "4"})
        log = web.log()
    robots = [(entry.start, entry.end) for entry in log if entry.path == "/robots.txt"]
    assert len(robots) == hosts
    assert {entry.host for entry in log if entry.path == "/p/1"} == {f"{a}:{web.port}" for a in web.addresses.values()}
    assert _most_at_once(robots) <= 4

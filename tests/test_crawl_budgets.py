"""Budgets and job failure: every URL left in the frontier gets a row saying why."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawler.exitcodes import JOB_FAILED
from tests.helpers import Database, crawl
from tests.testweb import TestWeb

pytestmark = pytest.mark.integration


def test_consecutive_failures_fail_the_job(web: TestWeb, database: Database) -> None:
    web.clear()
    result = crawl(
        "links",
        database,
        url=web.url("broken"),
        job_id="doomed",
        settings={
            "RETRY_TIMES": "0",
            "CRAWLER_JOB_FAILURE_THRESHOLD": "3",
            "CRAWLER_CIRCUIT_FAILURES": "100",
            "CONCURRENT_REQUESTS_PER_DOMAIN": "1",
        },
        status=JOB_FAILED,
    )
    assert "Closing the job (failed_consecutive_errors)" in result.stderr
    ((status, reason),) = database.query("SELECT status, finish_reason FROM crawl_jobs")
    assert (status, reason) == ("failed", "failed_consecutive_errors")
    statuses = [row["status"] for row in database.pages().values()]
    assert statuses.count("error") >= 3
    assert statuses.count("skipped") >= 1
    requested = {e.path for e in web.log("broken") if e.path != "/robots.txt"}
    assert len(requested) < 7  # it stopped instead of fetching the rest


def test_max_time_leaves_skipped_rows(web: TestWeb, database: Database) -> None:
    web.clear()
    crawl("links", database, url=web.url("delayed"), max_time="2")
    rows = database.pages()
    skipped = [row for row in rows.values() if row["status"] == "skipped"]
    fetched = [row for row in rows.values() if row["status"] == "fetched"]
    assert skipped and fetched
    assert {row["error"] for row in skipped} == {"not fetched: the max_time budget (2 s) was spent"}
    requested = {web.url("delayed", e.path) for e in web.log("delayed")}
    assert not any(row["url"] in requested for row in skipped)
    # A budget spent is the job done as asked: finished, as its exit status 0 says.
    assert database.query("SELECT status, finish_reason FROM crawl_jobs") == [("finished", "closespider_timeout")]


def test_max_pages_counts_downloads_and_leaves_skipped_rows(web: TestWeb, database: Database) -> None:
    web.clear()
    # The home page links to /p/1 … /p/5 and to /private/page, which robots.txt refuses: that
    # refusal downloads nothing, so the seventh download is a page of the next depth.
    crawl("links", database, url=web.url("fast"), max_pages="7")
    requested = [e.path for e in web.log("fast") if e.path != "/robots.txt"]
    assert len(requested) == len(set(requested)) == 7
    rows = database.pages()
    by_status: dict[str, list[str]] = {}
    for url, row in rows.items():
        by_status.setdefault(row["status"], []).append(url)
    assert sorted(by_status["fetched"]) == sorted(web.url("fast", path) for path in requested)
    assert by_status["blocked_by_robots"] == [web.url("fast", "/private/page")]
    assert by_status.keys() == {"fetched", "blocked_by_robots", "skipped"}
    assert {rows[url]["error"] for url in by_status["skipped"]} == {
        "not fetched: the max_pages budget (7 downloads) was spent"
    }
    assert database.query("SELECT status, finish_reason FROM crawl_jobs") == [("finished", "finished")]


def test_a_skipped_url_never_replaces_an_earlier_row(web: TestWeb, database: Database) -> None:
    web.clear()
    crawl("links", database, url=web.url("delayed"))
    before = {url: row["status"] for url, row in database.pages().items()}
    crawl("links", database, url=web.url("delayed"), max_time="1", job_id="short")
    after = {url: row["status"] for url, row in database.pages().items()}
    assert "skipped" not in after.values()
    assert before.keys() == after.keys()


def test_the_circuit_opens_after_consecutive_failures(web: TestWeb, database: Database) -> None:
    web.clear()
    crawl(
        "links",
        database,
        url=web.url("broken"),
        settings={
            "RETRY_TIMES": "0",
            "CRAWLER_JOB_FAILURE_THRESHOLD": "0",
            "CRAWLER_CIRCUIT_FAILURES": "3",
            "CRAWLER_CIRCUIT_OPEN_SECONDS": "1.5",
            "CONCURRENT_REQUESTS_PER_DOMAIN": "1",
        },
    )
    failures = sorted((e for e in web.log("broken") if e.status == 500), key=lambda e: e.start)
    assert len(failures) == 5  # the five pages the home page links to
    # three failures in a row open the circuit: the fourth waits, and its failure reopens it
    assert failures[3].start >= failures[2].end + 1.5 - 0.01
    assert failures[4].start >= failures[3].end + 1.5 - 0.01
    assert failures[1].start - failures[0].end < 0.5
    rows = database.pages()
    assert sum(1 for row in rows.values() if row["status"] == "error") == 5


def test_a_long_429_streak_at_the_maximum_delay_cancels_the_job(web: TestWeb, database: Database) -> None:
    web.clear()
    result = crawl(
        "links",
        database,
        url=web.url("refusing"),
        settings={
            "CRAWLER_CANCEL_429_STREAK": "3",
            "CRAWLER_MAX_DELAY": "0.2",
            "RETRY_TIMES": "10",
            "CRAWLER_DEFAULT_DELAY": "0.5",
        },
        status=JOB_FAILED,
    )
    assert "Closing the job (cancelled_429_streak)" in result.stderr
    ((status, reason),) = database.query("SELECT status, finish_reason FROM crawl_jobs")
    assert (status, reason) == ("failed", "cancelled_429_streak")  # as its exit status says
    refused = [e for e in web.log("refusing") if e.status == 429]
    assert 3 <= len(refused) <= 4
    (home,) = [row for url, row in database.pages().items() if url == web.url("refusing")]
    assert home["status"] in ("skipped", "error")


def test_the_page_budget_keeps_a_page_for_every_seed(web: TestWeb, database: Database, tmp_path: Path) -> None:
    web.clear()
    # Scrapy takes start requests as it has room for them, so the first seeds' pages are parsed
    # while later seeds wait; each page links to 200 pages that are not seeds.
    seeds = [web.url("heavy", f"/doc/{n}") for n in range(200, 260)]
    listed = tmp_path / "seeds.txt"
    listed.write_text("".join(f"{seed}\n" for seed in seeds))
    crawl("links", database, seeds_file=str(listed), max_pages=str(len(seeds)))
    requested = {web.url("heavy", e.path) for e in web.log("heavy") if e.path != "/robots.txt"}
    assert requested == set(seeds)
    skipped = [row for row in database.pages().values() if row["status"] == "skipped"]
    assert skipped and all(row["url"] not in seeds for row in skipped)

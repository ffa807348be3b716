"""Crawls of a site full of traps (``TrapSite``): the real pages are fetched, few trap pages are,
and every URL the crawl refused or found a twin of says why; three processes sharing the crawl
find the twins one process finds. Asserted from the rows and the server's own log."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from crawler.twins.simhash import distance
from tests.api_server import migrate
from tests.conftest import REDIS_URL
from tests.helpers import Database, crawl, finish_all, start_crawl, wait_until
from tests.testweb import TestWeb
from tests.testweb.sites import TrapSite

pytestmark = pytest.mark.integration

REAL = {"/", *TrapSite.REAL}
MAX_TRAP_FETCHES = 30
MAX_DISTANCE = 5  # the default
PROBE = {"CRAWLER_SOFT404_PROBE": "True"}  # the default, which the tests' settings turn off


def _rows(database: Database, web: TestWeb) -> dict[str, dict[str, Any]]:
    columns = ("url", "status", "error", "simhash", "duplicate_of", "text", "body", "followed_links")
    rows = database.query(f"SELECT {', '.join(columns)} FROM pages")
    return {row[0].removeprefix(web.base("traps")): dict(zip(columns, row)) for row in rows}


def _trap_fetches(web: TestWeb) -> list[str]:
    return [entry.path for entry in web.log("traps") if entry.path != "/robots.txt" and entry.path not in REAL]


def _assert_a_crawl_of_the_real_pages(rows: dict[str, dict[str, Any]], web: TestWeb) -> None:
    assert {path: rows[path]["status"] for path in REAL} == dict.fromkeys(REAL, "fetched")
    traps = _trap_fetches(web)
    assert len(traps) <= MAX_TRAP_FETCHES, sorted(traps)
    probes = {path for path in traps if path not in rows}
    assert len(probes) == 1 and next(iter(probes)).endswith(".html")  # the soft-404 probe, the only row-less fetch
    for path, row in rows.items():
        if row["status"] in ("filtered", "duplicate"):
            assert row["error"], path
        if row["status"] == "duplicate":
            twin = rows[row["duplicate_of"].removeprefix(web.base("traps"))]
            assert twin["status"] == "fetched" and row["text"] is None and row["body"] is None
            assert distance(int(row["simhash"], 16), int(twin["simhash"], 16)) <= MAX_DISTANCE
            assert row["followed_links"] == "[]"
    kept = [int(row["simhash"], 16) for row in rows.values() if row["status"] == "fetched"]
    assert all(distance(a, b) > MAX_DISTANCE for n, a in enumerate(kept) for b in kept[n + 1 :])  # no twin missed


def test_a_crawl_of_a_site_full_of_traps_fetches_its_pages_and_few_traps(
    web: TestWeb, database: Database, frontier: dict[str, str]
) -> None:
    web.clear()
    crawl("links", database, url=web.url("traps"), max_pages="300", settings={**frontier, **PROBE})
    rows = _rows(database, web)
    _assert_a_crawl_of_the_real_pages(rows, web)
    errors = [row["error"] or "" for row in rows.values()]
    session_copies = [path for path, row in rows.items() if path.startswith("/s/")]
    assert {rows[path]["status"] for path in session_copies} == {"duplicate", "filtered"}
    assert any(error.startswith("trap: /s/* gave ") for error in errors)  # the session ids, no longer followed
    assert any(error.startswith("soft 404: ") for error in errors)
    for broken in TrapSite.BROKEN:
        assert rows[broken]["status"] == "filtered" and rows[broken]["error"].startswith("soft 404: ")
    assert rows["/docs/guide/docs/guide/docs/guide/"]["error"] == (
        "trap: path segments 'docs/guide' repeat 3 times in a row (more than 2)"
    )
    faceted = [row for path, row in rows.items() if path.startswith("/search?")]
    assert [row["error"] for row in faceted] == ["trap: 25 query parameters (more than 20)"]
    calendar = {path: row["status"] for path, row in rows.items() if path.startswith("/calendar/")}
    assert calendar["/calendar/2026/01"] == "fetched" and "duplicate" in calendar.values()


def test_the_trap_rules_and_twins_can_be_turned_off(web: TestWeb, database: Database) -> None:
    web.clear()
    settings = {"CRAWLER_TWINS_ENABLED": "False", "CRAWLER_TRAP_MAX_SEGMENT_REPEATS": "0"}
    crawl("links", database, url=web.url("traps"), max_pages="60", settings=settings)
    rows = _rows(database, web)
    assert {row["status"] for row in rows.values()} <= {"fetched", "filtered", "skipped"}
    assert all(row["simhash"] is None for row in rows.values())
    assert len(_trap_fetches(web)) > MAX_TRAP_FETCHES  # what the traps cost without them


def test_three_processes_sharing_a_crawl_find_the_twins_one_process_finds(
    web: TestWeb, postgres_database: Database, crawl_name: str, tmp_path: Path
) -> None:
    web.clear()
    settings = {
        "REDIS_URL": REDIS_URL,
        "CRAWLER_CRAWL_ID": crawl_name,
        "CRAWLER_IDLE_CLOSE_SECONDS": "3",
        "CRAWLER_DEFAULT_DELAY": "0.2",  # paced, so that every process gets pages
        "CRAWLER_CONTROL_POLL_SECONDS": "0.2",
        "CRAWLER_HEARTBEAT_SECONDS": "0.5",
        **PROBE,
    }
    # The crawl is paused until all three processes run: on a busy machine one process could
    # otherwise crawl the whole site before the others have started.
    migrate(postgres_database)
    postgres_database.query(
        "INSERT INTO domain_controls (domain, paused, updated_by, updated_at) VALUES ('*', TRUE, 'test', ?) RETURNING domain",
        (datetime.now(UTC).isoformat(),),
    )
    logs = [tmp_path / f"worker-{n}.log" for n in range(3)]
    workers = [
        start_crawl("links", postgres_database, log, url=web.url("traps"), max_pages="300", settings=settings)
        for log in logs
    ]
    paused = "SELECT COUNT(*) FROM workers WHERE crawl_id = ? AND state = 'paused'"
    try:
        wait_until(lambda: postgres_database.query(paused, (crawl_name,))[0][0] == 3, 120, "three workers paused")
    finally:
        postgres_database.query(
            "UPDATE domain_controls SET paused = FALSE, updated_at = ? WHERE domain = '*' RETURNING domain",
            (datetime.now(UTC).isoformat(),),
        )
    for worker, output in zip(workers, finish_all(workers, logs, timeout=240)):
        assert worker.returncode == 0 and "Traceback" not in output, output[-5000:]
    rows = _rows(postgres_database, web)
    _assert_a_crawl_of_the_real_pages(rows, web)
    jobs = postgres_database.query("SELECT COUNT(DISTINCT job_id) FROM pages WHERE status IN ('fetched', 'duplicate')")
    assert jobs[0][0] >= 2  # the pages were shared out


def test_the_sitemap_spider_finds_the_twins_a_sitemap_lists(web: TestWeb, database: Database) -> None:
    web.clear()
    crawl("sitemap", database, url=web.url("traps"), settings=PROBE)
    rows = _rows(database, web)
    for page, copy in zip(("/about", "/contact"), TrapSite.LISTED_COPIES):
        pair = {page: rows[page], copy: rows[copy]}
        assert sorted(row["status"] for row in pair.values()) == ["duplicate", "fetched"]
        (duplicate,) = (path for path, row in pair.items() if row["status"] == "duplicate")
        (original,) = set(pair) - {duplicate}
        assert rows[duplicate]["duplicate_of"] == web.url("traps", original)
    others = REAL - {"/about", "/contact"}
    assert {path: rows[path]["status"] for path in others} == dict.fromkeys(others, "fetched")


def test_a_recrawl_keeps_unchanged_pages_unchanged_never_twins_of_themselves(
    web: TestWeb, database: Database, frontier: dict[str, str]
) -> None:
    settings = {**frontier, **PROBE, "CRAWLER_RECRAWL_MIN_INTERVAL": "0", "CRAWLER_RECRAWL_CONDITIONAL": "False"}
    web.clear()
    crawl("links", database, url=web.url("traps"), max_pages="300", settings=settings)
    first = _rows(database, web)
    web.clear()
    crawl("links", database, url=web.url("traps"), max_pages="300", job_id="again", settings=settings)
    second = _rows(database, web)
    assert {path: second[path]["status"] for path in REAL} == dict.fromkeys(REAL, "unchanged")
    assert len(_trap_fetches(web)) <= MAX_TRAP_FETCHES
    for path, row in second.items():
        assert row["duplicate_of"] != web.url("traps", path)
        if first[path]["status"] == "duplicate" and row["status"] == "unchanged":  # its twin's copy kept
            assert row["duplicate_of"] == first[path]["duplicate_of"] and row["body"] is None
    for broken in TrapSite.BROKEN:  # judged again, as nothing good was stored
        assert second[broken]["status"] == "filtered" and second[broken]["error"].startswith("soft 404: ")


def test_a_recrawl_finds_the_twin_of_a_page_stored_by_the_run_before(
    web: TestWeb, database: Database, frontier: dict[str, str]
) -> None:
    """The original is not fetched again: the twin is recognised against its stored fingerprint."""
    original, (copy, _) = "/about", TrapSite.LISTED_COPIES
    web.clear()
    crawl("links", database, url=web.url("traps", original), max_pages="1", settings=frontier)
    assert _rows(database, web)[original]["status"] == "fetched"
    web.clear()
    crawl("links", database, url=web.url("traps", copy), max_pages="1", job_id="again", settings=frontier)
    assert [entry.path for entry in web.log("traps") if entry.path != "/robots.txt"] == [copy]
    rows = _rows(database, web)
    assert rows[copy]["status"] == "duplicate" and rows[copy]["duplicate_of"] == web.url("traps", original)
    assert rows[copy]["error"].startswith(f"twin of {web.url('traps', original)} (SimHash ")
    assert rows[original]["status"] == "fetched"


def test_stored_fingerprints_can_be_left_unread(web: TestWeb, database: Database) -> None:
    original, (copy, _) = "/about", TrapSite.LISTED_COPIES
    web.clear()
    crawl("links", database, url=web.url("traps", original), max_pages="1")
    settings = {"CRAWLER_TWIN_STORED_PER_SITE": "0"}
    crawl("links", database, url=web.url("traps", copy), max_pages="1", job_id="again", settings=settings)
    assert _rows(database, web)[copy]["status"] == "fetched"  # as before the fingerprints were read

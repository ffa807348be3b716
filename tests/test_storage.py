"""The storage backends against real SQLite and PostgreSQL: schema, upserts, jobs."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from crawler.items import PageItem
from crawler.outcomes import page_item
from crawler.storage import open_backend
from crawler.storage.backend import Batch, StorageBackend
from crawler.storage.inbox import add_to_inbox, clear_inbox, give_back_to_inbox, recover_inbox, take_inbox
from crawler.storage.jobs import JobRecord, finish_job, start_job
from crawler.storage.pages import kept_fingerprints, purge_pages
from crawler.storage.rows import page_row
from crawler.storage.schema import MIGRATIONS
from tests.helpers import Database


def test_schema_is_created_once_and_versioned(database: Database) -> None:
    async def scenario() -> None:
        for _ in range(2):
            backend = open_backend(database.url)
            await backend.open()
            await backend.close()

    asyncio.run(scenario())
    versions = database.query("SELECT version FROM schema_version ORDER BY version")
    assert versions == [(version,) for version in range(1, len(MIGRATIONS) + 1)]  # each applied once
    tables = {"pages", "domains", "robots_decisions", "sitemap_entries", "crawl_jobs"}
    tables |= {"workers", "stats_samples", "domain_state", "request_log", "domain_controls", "frontier_inbox"}
    for table in tables:
        assert database.query(f"SELECT COUNT(*) FROM {table}") == [(0,)]


def test_upsert_keeps_first_discovery_counts_consecutive_errors_and_keeps_the_last_good_copy(
    database: Database,
) -> None:
    async def scenario() -> None:
        backend = open_backend(database.url)
        await backend.open()
        first = page_item("http://e.example/a", "fetched", title="One", body=b"\x00\x01")
        await backend.write(Batch(pages=[page_row(first)]))
        for _ in range(2):
            await backend.write(Batch(pages=[page_row(page_item("http://e.example/a", "error", error="HTTP 500"))]))
        await backend.close()
        return first

    first = asyncio.run(scenario())
    rows = database.query("SELECT status, error, error_count, title, discovered_at FROM pages")
    assert len(rows) == 1
    status, error, error_count, title, discovered_at = rows[0]
    assert (status, error, error_count, title) == ("error", "HTTP 500", 2, "One")
    discovered = discovered_at if isinstance(discovered_at, datetime) else datetime.fromisoformat(discovered_at)
    assert discovered == first.crawled_at

    async def success() -> None:
        backend = open_backend(database.url)
        await backend.open()
        await backend.write(Batch(pages=[page_row(page_item("http://e.example/a", "fetched", title="Back"))]))
        await backend.close()

    asyncio.run(success())
    assert database.query("SELECT status, error_count, title FROM pages") == [("fetched", 0, "Back")]


def test_text_with_nul_characters_is_stored(database: Database) -> None:
    async def scenario() -> None:
        backend = open_backend(database.url)
        await backend.open()
        await backend.write(
            Batch(pages=[page_row(page_item("http://e.example/nul", "fetched", text="a\x00b", body=b"a\x00b"))])
        )
        await backend.close()

    asyncio.run(scenario())
    text, body = database.query("SELECT text, body FROM pages")[0]
    assert text == "a\ufffdb" and bytes(body) == b"a\x00b"


def test_jobs(database: Database) -> None:
    async def scenario() -> None:
        backend = open_backend(database.url)
        await backend.open()
        await start_job(backend, JobRecord("j1", "links", "http://e.example/", datetime.now(UTC)))
        await finish_job(
            backend,
            "j1",
            finished_at=datetime.now(UTC),
            status="finished",
            reason="finished",
            counters={"pages_fetched": 3, "pages_failed": 1, "rows_written": 5},
            stats="{}",
        )
        await backend.close()

    asyncio.run(scenario())
    assert database.query("SELECT id, status, pages_fetched, pages_failed, rows_written FROM crawl_jobs") == [
        ("j1", "finished", 3, 1, 5)
    ]


def test_unknown_database_url_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="DATABASE_URL"):
        open_backend("mysql://localhost/x")


_GOOD = dict(
    title="Good",
    description="d",
    text="the text",
    body=b"<html>",
    content_hash="h1",
    links='["http://e.example/b"]',
    links_count=1,
    content_type="text/html",
    content_length=6,
    etag='"v1"',
    last_modified="Mon, 01 Jan 2024 00:00:00 GMT",
    final_url="http://e.example/a",
    depth=2,
    referrer="http://e.example/",
    recrawl_interval_seconds=7200.0,
    visit_count=3,
    change_count=1,
    next_crawl_at=datetime(2030, 1, 1, tzinfo=UTC),
)
_CONTENT = (
    "title",
    "description",
    "text",
    "body",
    "content_hash",
    "links",
    "links_count",
    "content_type",
    "content_length",
    "etag",
    "last_modified",
    "final_url",
)
_SCHEDULE = ("recrawl_interval_seconds", "visit_count", "change_count", "next_crawl_at")


def _write_pages(database: Database, *items: PageItem) -> None:
    async def scenario() -> None:
        backend = open_backend(database.url)
        await backend.open()
        for item in items:
            await backend.write(Batch(pages=[page_row(item)]))
        await backend.close()

    asyncio.run(scenario())


def _row(database: Database, columns: tuple[str, ...]) -> dict[str, object]:
    (row,) = database.query(f"SELECT {', '.join(columns)} FROM pages")
    return {c: bytes(v) if isinstance(v, memoryview) else v for c, v in zip(columns, row)}


def test_a_failed_visit_changes_only_the_visit_columns(database: Database) -> None:
    url = "http://e.example/a"
    _write_pages(database, page_item(url, "fetched", **_GOOD))
    before = _row(database, (*_CONTENT, *_SCHEDULE, "depth", "referrer"))
    failed = page_item(
        url, "error", error="TimeoutError: took longer than 30.0 seconds", http_status=503, job_id="later"
    )
    _write_pages(database, failed)
    after = _row(
        database,
        (
            *_CONTENT,
            *_SCHEDULE,
            "depth",
            "referrer",
            "status",
            "error",
            "http_status",
            "error_count",
            "crawled_at",
            "job_id",
        ),
    )
    assert {c: after[c] for c in before} == before
    assert (after["status"], after["error"], after["http_status"], after["error_count"], after["job_id"]) == (
        "error",
        failed.error,
        503,
        1,
        "later",
    )
    assert after["crawled_at"] in (failed.crawled_at, failed.crawled_at.isoformat())


def test_an_unchanged_visit_keeps_the_content_and_records_the_visit_and_schedule(database: Database) -> None:
    url = "http://e.example/a"
    _write_pages(database, page_item(url, "fetched", **_GOOD))
    content = _row(database, _CONTENT)
    visit = page_item(
        url,
        "unchanged",
        http_status=304,
        recrawl_interval_seconds=10080.0,
        visit_count=4,
        change_count=1,
        next_crawl_at=datetime(2031, 1, 1, tzinfo=UTC),
    )
    _write_pages(database, page_item(url, "error", error="HTTP 500"), visit)
    after = _row(database, (*_CONTENT, *_SCHEDULE, "status", "http_status", "error", "error_count"))
    assert {c: after[c] for c in _CONTENT} == content
    assert (after["status"], after["http_status"], after["error"], after["error_count"]) == ("unchanged", 304, None, 0)
    assert (after["recrawl_interval_seconds"], after["visit_count"], after["change_count"]) == (10080.0, 4, 1)
    assert str(after["next_crawl_at"]).startswith("2031-01-01")


def test_a_changed_page_replaces_the_stored_copy(database: Database) -> None:
    url = "http://e.example/a"
    _write_pages(
        database,
        page_item(url, "fetched", **_GOOD),
        page_item(url, "fetched", title="New", text="new text", content_hash="h2", etag='"v2"'),
    )
    assert _row(database, ("title", "text", "content_hash", "etag", "links")) == {
        "title": "New",
        "text": "new text",
        "content_hash": "h2",
        "etag": '"v2"',
        "links": None,
    }


def test_the_inbox_gives_back_what_dead_processes_took_and_purges_and_clears_say_how_many(database: Database) -> None:
    now = datetime.now(UTC)
    hour_ago = now - timedelta(hours=1)

    async def scenario() -> tuple[int, int, int, int]:
        backend = open_backend(database.url)
        await backend.open()
        for n in range(5):
            await add_to_inbox(backend, f"http://e.example/{n}", "links", None, "test", now)
        for worker, heartbeat, count in (("dead", hour_ago, 3), ("alive", now, 1)):
            await backend.execute(
                "INSERT INTO workers (worker_id, job_id, spider, hostname, pid, started_at, heartbeat_at, state) "
                "VALUES (?, 'j', 'links', 'h', 1, ?, ?, 'running')",
                (worker, hour_ago, heartbeat),
            )
            await take_inbox(backend, now=now, worker=worker, spider="links", crawl="c", limit=count)
        # The dead process took 0, 1 and 2 and crawled 0: 1 and 2 go back; the live one keeps 3.
        await backend.write(Batch(pages=[page_row(page_item("http://e.example/0", "fetched"))]))
        await backend.write(Batch(pages=[page_row(page_item("http://other.example/", "fetched"))]))
        returned = await recover_inbox(backend, now - timedelta(minutes=1))
        cleared = await clear_inbox(backend)  # 1, 2 and 4
        purged = await purge_pages(backend, domain="e.example")
        left = int(await backend.scalar("SELECT COUNT(*) FROM pages"))
        await backend.close()
        return returned, cleared, purged, left

    assert asyncio.run(scenario()) == (2, 3, 1, 1)
    assert database.query("SELECT url FROM frontier_inbox ORDER BY id") == [
        ("http://e.example/0",),
        ("http://e.example/3",),
    ]


def test_urls_a_process_took_and_could_not_schedule_go_back_to_the_inbox(database: Database) -> None:
    now = datetime.now(UTC)

    async def scenario() -> tuple[list[str], int, list[str]]:
        backend = open_backend(database.url)
        await backend.open()
        for n in range(3):
            await add_to_inbox(backend, f"http://e.example/{n}", "links", None, "test", now)
        taken = await take_inbox(backend, now=now, worker="w1", spider="links", crawl="c", limit=3)
        # Another process's URL of the same name is not this one's to give back.
        given = await give_back_to_inbox(backend, "w2", taken) + await give_back_to_inbox(backend, "w1", taken[1:])
        again = await take_inbox(backend, now=now, worker="w2", spider="links", crawl="c", limit=3)
        await backend.close()
        return taken, given, again

    taken, given, again = asyncio.run(scenario())
    assert given == 2 and again == taken[1:]


def test_batches_of_two_processes_updating_the_same_rows_in_other_orders_do_not_deadlock(
    postgres_database: Database,
) -> None:
    domains = [f"site-{n:03d}.example:80" for n in range(200)]
    now = datetime.now(UTC)

    def snapshots(order: list[str]) -> Batch:
        return Batch(domain_state=[(d, 1.0, None, 0.0, 0.0, None, "closed", 0, 0, 1, 0, 0, now) for d in order])

    async def scenario() -> None:
        backends = [open_backend(postgres_database.url) for _ in range(2)]
        for backend in backends:
            await backend.open()
        try:
            for _ in range(10):
                await asyncio.gather(backends[0].write(snapshots(domains)), backends[1].write(snapshots(domains[::-1])))
        finally:
            for backend in backends:
                await backend.close()

    asyncio.run(scenario())
    assert postgres_database.query("SELECT COUNT(*), SUM(pages) FROM domain_state") == [(200, 2 * 10 * 200)]


class _RecordingBackend:
    """The real backend, remembering the statements it was given."""

    def __init__(self, backend: StorageBackend):
        self.backend = backend
        self.statements: list[tuple[str, Sequence[Any]]] = []

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self.statements.append((sql, params))
        return await self.backend.execute(sql, params)


def _site_fingerprints(database: Database, other_pages: int) -> tuple[list[tuple[str, str]], str, Sequence[Any]]:
    """A site's kept fingerprints among ``other_pages`` pages of other sites; the statement read."""
    site = [
        page_item("http://s.example/1", "fetched", simhash="00000000000000aa"),
        page_item("http://s.example/2", "fetched", simhash="00000000000000bb", duplicate_of="http://s.example/1"),
        page_item("http://s.example/3", "error"),
        page_item("http://s.example/4", "unchanged", simhash="00000000000000cc"),
    ]
    others = [
        page_item(f"http://o{n}.example/", "fetched", simhash=f"{n:016x}", text="t", body=b"b" * 2000)
        for n in range(other_pages)
    ]

    async def scenario() -> tuple[list[tuple[str, str]], str, Sequence[Any]]:
        backend = open_backend(database.url)
        await backend.open()
        await backend.write(Batch(pages=[page_row(item) for item in others[: other_pages // 2] + site]))
        await backend.write(Batch(pages=[page_row(item) for item in others[other_pages // 2 :]]))
        recording = _RecordingBackend(backend)
        kept = await kept_fingerprints(recording, ["s.example", "www.s.example"], 10)  # type: ignore[arg-type]
        await backend.close()
        (statement,) = recording.statements
        return kept, *statement

    return asyncio.run(scenario())


def test_a_sites_stored_fingerprints_are_its_kept_pages_first_stored_first(database: Database) -> None:
    kept, _, _ = _site_fingerprints(database, other_pages=20)
    assert kept == [("http://s.example/1", "00000000000000aa"), ("http://s.example/4", "00000000000000cc")]


def test_reading_a_sites_stored_fingerprints_does_not_walk_the_other_sites_pages(tmp_path: Path) -> None:
    # SQLite, whose planner took the status index (every page 'fetched') over the domain's: one
    # read per site then walked the whole table. Counted in steps of SQLite's virtual machine.
    def steps(other_pages: int) -> int:
        database = Database(f"sqlite:///{tmp_path / f'{other_pages}.db'}")
        kept, sql, params = _site_fingerprints(database, other_pages)
        assert len(kept) == 2
        counted = 0

        def count() -> int:
            nonlocal counted
            counted += 1
            return 0

        with sqlite3.connect(tmp_path / f"{other_pages}.db") as connection:
            connection.set_progress_handler(count, 1)
            assert len(connection.execute(sql, params).fetchall()) == 2
        return counted

    few, many = steps(10), steps(2_000)
    assert many < 2 * few, (few, many)


def test_a_new_sqlite_file_has_pages_of_16_kib_and_an_older_file_keeps_its_own(tmp_path: Path) -> None:
    older = tmp_path / "older.db"
    with sqlite3.connect(older) as connection:
        connection.execute("CREATE TABLE made_before (x INTEGER)")

    async def open_and_close(path: Path) -> None:
        backend = open_backend(f"sqlite:///{path}")
        await backend.open()  # the schema made or brought up to date
        await backend.close()

    for path in (tmp_path / "new.db", older):
        asyncio.run(open_and_close(path))
    assert _page_size(tmp_path / "new.db") == 16384
    assert _page_size(older) == 4096
    assert sqlite3.connect(older).execute("SELECT COUNT(*) FROM pages").fetchone() == (0,)


def _page_size(path: Path) -> int:
    with sqlite3.connect(path) as connection:
        return connection.execute("PRAGMA page_size").fetchone()[0]

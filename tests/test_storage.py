"""The storage backends against real SQLite and PostgreSQL: schema, upserts, jobs."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from crawler.items import PageItem
from crawler.pipelines.rows import page_row
from crawler.storage import open_backend
from crawler.storage.backend import Batch, JobRecord
from crawler.storage.schema import MIGRATIONS
from tests.helpers import Database


def _page(url: str, status: str = "fetched", **fields) -> PageItem:
    from crawler.identity import surt_key, url_hash

    return PageItem(url=url, url_hash=url_hash(url), surt_key=surt_key(url), domain="e.example", status=status,
                    crawled_at=datetime.now(UTC), **fields)  # fmt: skip


def test_schema_is_created_once_and_versioned(database: Database) -> None:
    async def scenario() -> None:
        for _ in range(2):
            backend = open_backend(database.url)
            await backend.open()
            await backend.close()

    asyncio.run(scenario())
    versions = database.query("SELECT version FROM schema_version ORDER BY version")
    assert versions == [(v,) for v in range(1, len(MIGRATIONS) + 1)]  # each migration once
    tables = {"pages", "domains", "robots_decisions", "sitemap_entries", "crawl_jobs"}
    for table in tables:
        assert database.query(f"SELECT COUNT(*) FROM {table}") == [(0,)]


def test_upsert_keeps_first_discovery_and_counts_consecutive_errors(database: Database) -> None:
    async def scenario() -> None:
        backend = open_backend(database.url)
        await backend.open()
        first = _page("http://e.example/a", title="One", body=b"\x00\x01")
        await backend.write(Batch(pages=[page_row(first)]))
        for _ in range(2):
            await backend.write(Batch(pages=[page_row(_page("http://e.example/a", "error", error="HTTP 500"))]))
        await backend.close()
        return first

    first = asyncio.run(scenario())
    rows = database.query("SELECT status, error, error_count, title, discovered_at FROM pages")
    assert len(rows) == 1
    status, error, error_count, title, discovered_at = rows[0]
    assert (status, error, error_count, title) == ("error", "HTTP 500", 2, None)
    discovered = discovered_at if isinstance(discovered_at, datetime) else datetime.fromisoformat(discovered_at)
    assert discovered == first.crawled_at

    async def success() -> None:
        backend = open_backend(database.url)
        await backend.open()
        await backend.write(Batch(pages=[page_row(_page("http://e.example/a", title="Back"))]))
        await backend.close()

    asyncio.run(success())
    assert database.query("SELECT status, error_count, title FROM pages") == [("fetched", 0, "Back")]


def test_text_with_nul_characters_is_stored(database: Database) -> None:
    async def scenario() -> None:
        backend = open_backend(database.url)
        await backend.open()
        await backend.write(Batch(pages=[page_row(_page("http://e.example/nul", text="a\x00b", body=b"a\x00b"))]))
        await backend.close()

    asyncio.run(scenario())
    text, body = database.query("SELECT text, body FROM pages")[0]
    assert text == "a\ufffdb" and bytes(body) == b"a\x00b"


def test_jobs(database: Database) -> None:
    async def scenario() -> None:
        backend = open_backend(database.url)
        await backend.open()
        await backend.start_job(JobRecord("j1", "links", "http://e.example/", datetime.now(UTC)))
        await backend.finish_job("j1", finished_at=datetime.now(UTC), status="finished", reason="finished",
                                 counters={"pages_fetched": 3, "pages_failed": 1, "rows_written": 5}, stats="{}")  # fmt: skip
        await backend.close()

    asyncio.run(scenario())
    assert database.query("SELECT id, status, pages_fetched, pages_failed, rows_written FROM crawl_jobs") == [
        ("j1", "finished", 3, 1, 5)
    ]


def test_unknown_database_url_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="DATABASE_URL"):
        open_backend("mysql://localhost/x")

"""What the database holds of pages, read in batches: the state of pages a crawl is about to
schedule again, and keyset pages of rows for exports."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

from crawler.identity import url_hash
from crawler.storage.backend import StorageBackend

QUERY_SIZE = 500
"""URLs per query: well under SQLite's limit of bound parameters."""
EXPORT_CHUNK = 1_000
"""Rows read at a time by an export."""

STORED_COLUMNS = (
    "etag", "last_modified", "content_hash", "crawled_at", "next_crawl_at", "recrawl_interval_seconds",
    "visit_count", "change_count", "status",
)  # fmt: skip
"""What ``stored_pages`` reads of each page."""


async def any_page(backend: StorageBackend) -> bool:
    """Whether the database holds any page at all."""
    return bool(await backend.execute("SELECT 1 FROM pages LIMIT 1", []))


async def stored_pages(backend: StorageBackend, urls: Iterable[str]) -> dict[str, tuple[Any, ...]]:
    """The ``STORED_COLUMNS`` of those of ``urls`` that have a row, by URL."""
    by_hash = {url_hash(url): url for url in urls}
    found: dict[str, tuple[Any, ...]] = {}
    for hashes in _chunks(list(by_hash)):
        rows = await backend.execute(
            f"SELECT url_hash, {', '.join(STORED_COLUMNS)} FROM pages WHERE url_hash IN ({_marks(hashes)})", hashes
        )
        for key, *columns in rows:
            found[by_hash[key]] = tuple(columns)
    return found


async def stored_links(backend: StorageBackend, urls: Iterable[str]) -> dict[str, str]:
    """The links (JSON) the crawl followed from those of ``urls`` it last downloaded, by URL."""
    by_hash = {url_hash(url): url for url in urls}
    found: dict[str, str] = {}
    for hashes in _chunks(list(by_hash)):
        rows = await backend.execute(
            f"SELECT url_hash, COALESCE(followed_links, links) FROM pages "
            f"WHERE COALESCE(followed_links, links) IS NOT NULL AND url_hash IN ({_marks(hashes)})",
            hashes,
        )
        for key, links in rows:
            found[by_hash[key]] = links
    return found


async def page_rows(
    backend: StorageBackend, columns: Iterable[str], filters: Mapping[str, str]
) -> AsyncIterator[tuple[Any, ...]]:
    """``columns`` of every page whose ``filters`` columns equal their values, in ``id`` order:
    keyset pages over the id, constant memory on tables of any size."""
    where = "".join(f" AND {column} = ?" for column in filters)
    sql = f"SELECT id, {', '.join(columns)} FROM pages WHERE id > ?{where} ORDER BY id LIMIT {EXPORT_CHUNK}"
    last = 0
    while True:
        rows = await backend.execute(sql, (last, *filters.values()))
        for row in rows:
            yield row[1:]
        if len(rows) < EXPORT_CHUNK:
            return
        last = rows[-1][0]


def _chunks(items: list[str]) -> Iterable[list[str]]:
    for start in range(0, len(items), QUERY_SIZE):
        yield items[start : start + QUERY_SIZE]


def _marks(items: list[str]) -> str:
    return ", ".join("?" * len(items))

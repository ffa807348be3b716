"""What the database holds of pages: the state of pages a crawl is about to schedule again (read
in batches), keyset pages of rows for exports and the API, and purges."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from crawler.identity import url_hash
from crawler.storage.backend import StorageBackend

QUERY_SIZE = 500
"""URLs per query: well under SQLite's limit of bound parameters."""
EXPORT_CHUNK = 1_000
"""Rows read at a time by an export."""

STORED_COLUMNS = (
    "etag",
    "last_modified",
    "content_hash",
    "crawled_at",
    "next_crawl_at",
    "recrawl_interval_seconds",
    "visit_count",
    "change_count",
    "status",
    "warc_payload_digest",
)
"""What ``stored_pages`` reads of each page."""


async def any_page(backend: StorageBackend) -> bool:
    """Whether the database holds any page at all."""
    return bool(await backend.execute("SELECT 1 FROM pages LIMIT 1", []))


async def stored_pages(backend: StorageBackend, urls: Iterable[str]) -> dict[str, tuple[Any, ...]]:
    """The ``STORED_COLUMNS`` of those of ``urls`` that have a row, by URL."""
    return await _by_url(backend, urls, ", ".join(STORED_COLUMNS))


async def stored_links(backend: StorageBackend, urls: Iterable[str]) -> dict[str, str]:
    """The links (JSON) the crawl followed from those of ``urls`` it last downloaded, by URL."""
    links = "COALESCE(followed_links, links)"
    return {url: row[0] for url, row in (await _by_url(backend, urls, links, f"{links} IS NOT NULL")).items()}


async def kept_fingerprints(backend: StorageBackend, domains: Sequence[str], limit: int) -> list[tuple[str, str]]:
    """The URL and SimHash of at most ``limit`` pages of ``domains`` kept as pages of their own
    (not twins), first stored first. Reads only the rows of ``domains``, however many pages of
    other domains the table holds."""
    # COALESCE (status is never NULL) keeps SQLite off the status index, which it otherwise
    # prefers to the domain's: nearly every page is 'fetched', so that index walked the whole
    # table once per site, and a crawl of 10,000 sites spent most of its time there.
    sql = (
        f"SELECT url, simhash FROM pages WHERE domain IN ({_marks(list(domains))})"
        " AND COALESCE(status, '') IN ('fetched', 'unchanged') AND simhash IS NOT NULL AND duplicate_of IS NULL"
        f" ORDER BY id LIMIT {int(limit)}"
    )
    return [(url, simhash) for url, simhash in await backend.execute(sql, list(domains))]


async def _by_url(
    backend: StorageBackend, urls: Iterable[str], columns: str, condition: str = "TRUE"
) -> dict[str, tuple[Any, ...]]:
    """``columns`` of the rows of ``urls`` that meet ``condition``, by URL, in chunks of hashes."""
    by_hash = {url_hash(url): url for url in urls}
    found: dict[str, tuple[Any, ...]] = {}
    for hashes in _chunks(list(by_hash)):
        sql = f"SELECT url_hash, {columns} FROM pages WHERE {condition} AND url_hash IN ({_marks(hashes)})"
        for key, *values in await backend.execute(sql, hashes):
            found[by_hash[key]] = tuple(values)
    return found


async def page_rows(
    backend: StorageBackend, columns: Iterable[str], filters: Mapping[str, Sequence[str]]
) -> AsyncIterator[tuple[Any, ...]]:
    """``columns`` of every page whose ``filters`` columns hold one of their values, in ``id``
    order: keyset pages over the id, constant memory on tables of any size."""
    where = "".join(f" AND {column} IN ({_marks(list(values))})" for column, values in filters.items())
    sql = f"SELECT id, {', '.join(columns)} FROM pages WHERE id > ?{where} ORDER BY id LIMIT {EXPORT_CHUNK}"
    values = [value for accepted in filters.values() for value in accepted]
    last = 0
    while True:
        rows = await backend.execute(sql, (last, *values))
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


LISTED_COLUMNS = (
    "id",
    "url",
    "domain",
    "status",
    "http_status",
    "content_type",
    "content_length",
    "title",
    "error",
    "crawled_at",
    "crawl_duration_ms",
    "depth",
    "discovered_via",
    "job_id",
)
"""What ``newest_pages`` lists of each page."""


def page_filters(
    *,
    domain: str | None = None,
    status: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> tuple[list[str], list[Any]]:
    """Conditions on ``pages`` (ANDed) and their parameters."""
    conditions, params = [], []
    for condition, value in (
        ("domain = ?", domain),
        ("status = ?", status),
        ("crawled_at >= ?", since),
        ("crawled_at < ?", until),
    ):
        if value is not None:
            conditions.append(condition)
            params.append(value)
    return conditions, params


async def newest_pages(
    backend: StorageBackend,
    *,
    limit: int,
    after: tuple[datetime, int] | None,
    domain: str | None,
    status: str | None,
    since: datetime | None,
    until: datetime | None,
) -> list[dict[str, Any]]:
    """Newest first, by (crawled_at, id): a keyset page, which an index answers at any depth."""
    conditions, params = page_filters(domain=domain, status=status, since=since, until=until)
    if after is not None:
        moment, row_id = after
        conditions.append("(crawled_at < ? OR (crawled_at = ? AND id < ?))")
        params += [moment, moment, row_id]
    where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
    sql = f"SELECT {', '.join(LISTED_COLUMNS)} FROM pages {where} ORDER BY crawled_at DESC, id DESC LIMIT ?"
    return await backend.dicts(sql, LISTED_COLUMNS, (*params, limit))


async def purge_pages(backend: StorageBackend, domain: str | None = None, before: datetime | None = None) -> int:
    """Delete the pages of ``domain`` crawled before ``before`` (every page without either); how many."""
    conditions, values = page_filters(domain=domain, until=before)
    where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
    return await backend.execute_count(f"DELETE FROM pages {where}", values)

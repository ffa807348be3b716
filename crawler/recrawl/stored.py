"""What the database knows of the pages a crawl is about to schedule: their validators,
revisit schedule and stored links, read in batches through the crawl's backend (off the
reactor: psycopg's asyncio connection, SQLite on its own thread)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from crawler.identity import url_hash
from crawler.recrawl.schedule import History
from crawler.storage.backend import StorageBackend
from crawler.storage.values import unix_time

QUERY_SIZE = 500
"""URLs per query: well under SQLite's limit of bound parameters."""

_CONTENT_STATUSES = frozenset({"fetched", "noindex", "unchanged"})


@dataclass(frozen=True, slots=True)
class StoredPage:
    etag: str | None
    last_modified: str | None
    content_hash: str | None
    last_visit: float | None
    next_at: float | None
    history: History
    has_content: bool
    """The row holds a good copy of the page (a failed visit keeps the last one)."""

    def validators(self) -> dict[str, str]:
        """The headers of a conditional request for the stored copy."""
        if not self.has_content:
            return {}
        headers = {"If-None-Match": self.etag} if self.etag else {}
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers

    def meta(self) -> dict[str, Any]:
        """What the visit's row needs of the stored one, as plain JSON for a shared frontier."""
        history = self.history
        return {"i": history.interval, "n": history.revisits, "x": history.changes, "h": self.content_hash}


def history_of(meta: dict[str, Any] | None) -> tuple[History | None, str | None]:
    """The history and stored content hash a request carries (see ``StoredPage.meta``)."""
    if not meta:
        return None, None
    return History(meta.get("i"), meta.get("n", 0), meta.get("x", 0)), meta.get("h")


class StoredPages:
    def __init__(self, backend: StorageBackend):
        self.backend = backend

    async def any(self) -> bool:
        """Whether the database holds any page at all."""
        return bool(await self.backend.execute("SELECT 1 FROM pages LIMIT 1", []))

    async def load(self, urls: Iterable[str]) -> dict[str, StoredPage]:
        """The stored state of those of ``urls`` that have a row, by URL."""
        by_hash = {url_hash(url): url for url in urls}
        found: dict[str, StoredPage] = {}
        columns = "url_hash, etag, last_modified, content_hash, crawled_at, next_crawl_at, recrawl_interval_seconds, visit_count, change_count, status"
        for hashes in _chunks(list(by_hash)):
            rows = await self.backend.execute(f"SELECT {columns} FROM pages WHERE url_hash IN ({_marks(hashes)})", hashes)
            for key, etag, modified, content_hash, visited, next_at, interval, revisits, changes, status in rows:
                found[by_hash[key]] = StoredPage(
                    etag=etag,
                    last_modified=modified,
                    content_hash=content_hash,
                    last_visit=unix_time(visited),
                    next_at=unix_time(next_at),
                    history=History(interval, revisits, changes),
                    has_content=status in _CONTENT_STATUSES or (status == "error" and content_hash is not None),
                )
        return found

    async def links(self, urls: Iterable[str]) -> dict[str, list[str]]:
        """The links the crawl followed from ``urls`` when it last downloaded them."""
        by_hash = {url_hash(url): url for url in urls}
        found: dict[str, list[str]] = {}
        for hashes in _chunks(list(by_hash)):
            rows = await self.backend.execute(
                f"SELECT url_hash, COALESCE(followed_links, links) FROM pages "
                f"WHERE COALESCE(followed_links, links) IS NOT NULL AND url_hash IN ({_marks(hashes)})",
                hashes,
            )
            for key, links in rows:
                found[by_hash[key]] = json.loads(links)
        return found


def _chunks(items: list[str]) -> Iterable[list[str]]:
    for start in range(0, len(items), QUERY_SIZE):
        yield items[start : start + QUERY_SIZE]


def _marks(items: list[str]) -> str:
    return ", ".join("?" * len(items))

"""What the database knows of the pages a crawl is about to schedule: their validators,
revisit schedule, stored links and the digest of their archived payload, read in batches
(``crawler.storage.pages``)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from crawler.recrawl.schedule import History
from crawler.storage.backend import StorageBackend
from crawler.storage.pages import any_page, stored_links, stored_pages
from crawler.storage.values import unix_time

_CONTENT_STATUSES = frozenset({"fetched", "noindex", "unchanged", "duplicate"})


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
    payload_digest: str | None = None
    """``WARC-Payload-Digest`` of the copy, when it was archived (``CRAWLER_WARC_DIR``)."""

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
        # Only a good copy can be unchanged: a soft 404 fetched again is judged again.
        content_hash = self.content_hash if self.has_content else None
        meta = {"i": history.interval, "n": history.revisits, "x": history.changes, "h": content_hash}
        if self.payload_digest:
            meta["d"] = self.payload_digest
        return meta


def history_of(meta: dict[str, Any] | None) -> tuple[History | None, str | None]:
    """The history and stored content hash a request carries (see ``StoredPage.meta``)."""
    if not meta:
        return None, None
    return History(meta.get("i"), meta.get("n", 0), meta.get("x", 0)), meta.get("h")


def stored_payload_digest(meta: dict[str, Any] | None) -> str | None:
    """The digest of the archived payload of the stored copy a request carries (see ``StoredPage.meta``)."""
    return meta.get("d") if meta else None


class StoredPages:
    def __init__(self, backend: StorageBackend):
        self.backend = backend

    async def any(self) -> bool:
        """Whether the database holds any page at all."""
        return await any_page(self.backend)

    async def load(self, urls: Iterable[str]) -> dict[str, StoredPage]:
        """The stored state of those of ``urls`` that have a row, by URL."""
        found: dict[str, StoredPage] = {}
        for url, row in (await stored_pages(self.backend, urls)).items():
            etag, modified, content_hash, visited, next_at, interval, revisits, changes, status, digest = row
            found[url] = StoredPage(
                etag=etag,
                last_modified=modified,
                content_hash=content_hash,
                last_visit=unix_time(visited),
                next_at=unix_time(next_at),
                history=History(interval, revisits, changes),
                has_content=status in _CONTENT_STATUSES or (status == "error" and content_hash is not None),
                payload_digest=digest,
            )
        return found

    async def links(self, urls: Iterable[str]) -> dict[str, list[str]]:
        """The links the crawl followed from ``urls`` when it last downloaded them."""
        return {url: json.loads(links) for url, links in (await stored_links(self.backend, urls)).items()}

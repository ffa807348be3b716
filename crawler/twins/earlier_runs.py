"""The fingerprints earlier runs of a crawl stored (``pages.simhash``), read into the twin index
when the crawl meets a site: a twin is recognised against a page stored before even when that
page is not fetched again. Read once per site and process, at most ``per_site`` pages of a site
(first stored first), while that site's first page waits; pages of other sites go on."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

from crawler.storage.backend import StorageBackend, StorageUnavailable
from crawler.storage.pages import kept_fingerprints
from crawler.twins.index_local import Twin

logger = logging.getLogger(__name__)

ADDED_AT_ONCE = 500
"""Fingerprints handed to the index at a time: the reactor runs between them (and a shared
index gets them in one pipeline)."""


class Index(Protocol):
    async def find_or_add(self, site: str, fingerprint: int, url: str) -> Twin | None: ...


class StoredFingerprints:
    """``backend``: the crawl's database once open (None: nothing to read, as without storage)."""

    def __init__(self, backend: Callable[[], StorageBackend | None], per_site: int):
        self.backend = backend
        self.per_site = per_site
        self._reads: dict[str, asyncio.Future[int]] = {}

    async def read_into(self, index: Index, site: str) -> None:
        """Have ``site``'s stored fingerprints in ``index``: read at the first call for the site,
        awaited by every call until they are in."""
        read = self._reads.get(site)
        if read is None:
            read = self._reads[site] = asyncio.ensure_future(self._read(index, site))
        if not read.done():  # shielded: a page given up does not end the read the others wait for
            await asyncio.shield(read)

    async def _read(self, index: Index, site: str) -> int:
        backend = self.backend()
        if backend is None:
            return 0
        try:
            stored = await kept_fingerprints(backend, (site, f"www.{site}"), self.per_site)
        except StorageUnavailable as exc:
            # Twins of stored pages are missed on this site; its pages are still judged.
            logger.warning(
                "Could not read the fingerprints stored for %s (%s): judging its pages without them", site, exc
            )
            return 0
        for start in range(0, len(stored), ADDED_AT_ONCE):
            chunk = stored[start : start + ADDED_AT_ONCE]
            await asyncio.gather(*(index.find_or_add(site, int(simhash, 16), url) for url, simhash in chunk))
        return len(stored)

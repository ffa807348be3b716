"""The crawl's WARC files (ISO 28500): what was fetched, as it came off the wire.

``exchange`` takes a request and its response as plain data, ``records`` makes WARC records of
them with warcio, ``files`` appends them to the files of one process (named by ``names``,
indexed by ``index``), ``writer`` does so on a thread of its own. The downloader middleware
``crawler.middlewares.warc`` feeds it; ``CRAWLER_WARC_DIR`` turns it on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ARCHIVED = "warc_archived"
"""Meta key: where the record of the request's latest response went (``Archived.as_meta``)."""


@dataclass(frozen=True, slots=True)
class Archived:
    """Where a response (or revisit) record was written, and what it holds."""

    filename: str
    offset: int
    """Of the record's gzip member in the file, as a CDXJ index gives it."""
    record_id: str
    payload_digest: str | None
    """Of the payload the record holds or, for a revisit, refers to (``sha1:`` and base 32)."""

    def as_meta(self) -> dict[str, Any]:
        """Plain data, which a request's meta may carry."""
        return {"file": self.filename, "offset": self.offset, "id": self.record_id, "digest": self.payload_digest}


def archived_in(meta: dict[str, Any]) -> Archived | None:
    """Where the latest response of the request with ``meta`` was archived, if it was."""
    found = meta.get(ARCHIVED)
    return Archived(found["file"], found["offset"], found["id"], found["digest"]) if found else None

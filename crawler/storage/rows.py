"""Items as the rows the storage backend writes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from crawler.items import PageItem, SitemapEntryItem
from crawler.storage.schema import PAGE_COLUMNS, SITEMAP_ENTRY_COLUMNS


def page_row(item: PageItem) -> tuple[Any, ...]:
    # discovered_at is the crawl time of the first row; the upsert keeps the first value. The
    # error count of a first row (a later one counts in the upsert): one failed fetch, or none.
    return (*(_storable(getattr(item, column)) for column in PAGE_COLUMNS), item.crawled_at, int(item.status == "error"))


def _storable(value: Any) -> Any:
    # PostgreSQL text cannot hold NUL characters, which undecodable pages do contain.
    return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value


def sitemap_entry_row(item: SitemapEntryItem) -> tuple[Any, ...]:
    return tuple(getattr(item, column) for column in SITEMAP_ENTRY_COLUMNS)


def json_safe(row: tuple[Any, ...]) -> list[Any]:
    """A row as JSON can hold it, for the file of rows that could not be written."""
    return [
        value.isoformat() if isinstance(value, datetime) else value.hex() if isinstance(value, bytes) else value
        for value in row
    ]

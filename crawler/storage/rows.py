"""Items, and what the crawl learns, as the rows the storage backend writes (in the column
order of ``crawler.storage.schema``)."""

from __future__ import annotations

from datetime import UTC, datetime
from operator import attrgetter
from typing import Any

from crawler.items import PageItem, SitemapEntryItem
from crawler.storage.schema import PAGE_COLUMNS, SITEMAP_ENTRY_COLUMNS

_PAGE_VALUES = attrgetter(*PAGE_COLUMNS)


def page_row(item: PageItem) -> tuple[Any, ...]:
    # discovered_at is the crawl time of the first row; the upsert keeps the first value. The
    # error count of a first row (a later one counts in the upsert): one failed fetch, or none.
    return (*map(_storable, _PAGE_VALUES(item)), item.crawled_at, int(item.status == "error"))


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


def domain_row(domain: str, learned_delay: float, floor: float, robots_delay: float | None) -> tuple[Any, ...]:
    """A domain's learned pacing, in ``DOMAIN_COLUMNS`` order."""
    return (domain, learned_delay, floor, robots_delay, datetime.now(UTC))


def robots_row(
    domain: str,
    text: str | None,
    status: int | None,
    fetched_at: float,
    expires_at: float,
    crawl_delay: float | None,
    allowed: bool,
) -> tuple[Any, ...]:
    """A domain's robots.txt fetch, in ``ROBOTS_COLUMNS`` order (times as Unix seconds)."""
    return (
        domain,
        text,
        status,
        datetime.fromtimestamp(fetched_at, UTC),
        datetime.fromtimestamp(expires_at, UTC),
        crawl_delay,
        allowed,
        datetime.now(UTC),
    )


def robots_decision_row(
    url: str,
    domain: str,
    user_agent: str,
    allowed: bool,
    rule: str | None,
    crawl_delay: float | None,
    reason: str | None,
    job_id: str | None,
) -> tuple[Any, ...]:
    """A robots.txt decision, in ``ROBOTS_DECISION_COLUMNS`` order."""
    return (url, domain, user_agent, allowed, rule, crawl_delay, reason, datetime.now(UTC), job_id)

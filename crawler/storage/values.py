"""Values as the two backends give them back: PostgreSQL returns timestamps as datetimes, SQLite
as the ISO 8601 text they were stored as (``crawler.storage.sqlite``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def as_datetime(value: datetime | str | None) -> datetime | None:
    """A stored timestamp as an aware datetime (UTC unless it says otherwise); None stays None."""
    if value is None:
        return None
    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def unix_time(value: datetime | str | None) -> float | None:
    """A stored timestamp as Unix seconds; None stays None."""
    when = as_datetime(value)
    return None if when is None else when.timestamp()


def json_value(value: Any) -> Any:
    """A stored value as JSON holds it: timestamps as ISO text, bodies left out."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bytes | memoryview):
        return None
    return value


def utc_now() -> datetime:
    """Now, as timestamps are stored."""
    return datetime.now(UTC)

"""Times as the two backends return them: PostgreSQL gives datetimes, SQLite the ISO text they
were stored as."""

from __future__ import annotations

from datetime import UTC, datetime


def as_datetime(value: datetime | str) -> datetime:
    """An aware datetime; UTC unless the value says otherwise."""
    when = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)

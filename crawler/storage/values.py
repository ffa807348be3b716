"""Values as the two backends give them back."""

from __future__ import annotations

from datetime import datetime


def unix_time(value: datetime | str | None) -> float | None:
    """A stored timestamp as Unix seconds: PostgreSQL gives datetimes, SQLite the ISO text
    they were stored as."""
    if value is None:
        return None
    return (value if isinstance(value, datetime) else datetime.fromisoformat(value)).timestamp()

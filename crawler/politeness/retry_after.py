"""``Retry-After``: delay-seconds or an HTTP date (RFC 9110 §10.2.3)."""

from __future__ import annotations

from email.utils import parsedate_to_datetime


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """Seconds to wait from ``now`` (a Unix time), or None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now)

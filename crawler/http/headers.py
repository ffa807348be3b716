"""Response header values, read the same way by the rows and the middlewares."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from scrapy.http import Response


def header(response: Response, name: str) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1").strip() if value else None


def header_values(response: Response, name: str) -> list[str]:
    return [v.decode("latin-1") for v in response.headers.getlist(name)]


def http_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)


def media_type(response: Response) -> str | None:
    """The media type without parameters, lowercased (``text/html``)."""
    return parse_media_type(header(response, "Content-Type"))


def parse_media_type(value: str | None) -> str | None:
    """The media type of a ``Content-Type`` value, without parameters, lowercased."""
    return value.partition(";")[0].strip().lower() or None if value else None


def retry_after(response: Response, now: float) -> float | None:
    """Seconds the server asks us to wait (``Retry-After``), from ``now`` (Unix time)."""
    return retry_after_seconds(header(response, "Retry-After"), now)


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """A ``Retry-After`` value, delay-seconds or an HTTP date (RFC 9110 §10.2.3), as seconds to
    wait from ``now`` (a Unix time); None when absent or unreadable."""
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

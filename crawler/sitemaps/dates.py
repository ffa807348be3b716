"""Dates as sitemaps write them: W3C datetime (lastmod, Atom) and RFC 822 (RSS pubDate)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

_W3C = re.compile(
    r"^(?P<y>\d{4})(?:-(?P<m>\d{2})(?:-(?P<d>\d{2})"
    r"(?:[T ](?P<H>\d{2}):(?P<M>\d{2})(?::(?P<S>\d{2})(?:[.,](?P<f>\d+))?)?"
    r"\s*(?P<tz>Z|[+-]\d{2}:?\d{2})?)?)?)?$",
    re.IGNORECASE,
)


def parse_date(text: str | None) -> datetime | None:
    """A timezone-aware UTC datetime from a W3C or RFC 822 date; None if unreadable.

    A W3C date without a zone is taken as UTC, as crawler-commons and search engines do.
    """
    if not text:
        return None
    text = text.strip()
    parsed = _parse_w3c(text) or _parse_rfc822(text)
    return parsed.astimezone(UTC) if parsed else None


def _parse_w3c(text: str) -> datetime | None:
    match = _W3C.match(text)
    if not match:
        return None
    g = match.groupdict()
    try:
        value = datetime(
            int(g["y"]),
            int(g["m"] or 1),
            int(g["d"] or 1),
            int(g["H"] or 0),
            int(g["M"] or 0),
            int(g["S"] or 0),
            int((g["f"] or "0")[:6].ljust(6, "0")),
            tzinfo=UTC,
        )
    except ValueError:
        return None
    tz = g["tz"]
    if tz and tz.upper() != "Z":
        tz = tz.replace(":", "")
        offset = datetime.strptime(tz, "%z").utcoffset()
        if offset is not None:
            value = value.replace(tzinfo=None) - offset
            value = value.replace(tzinfo=UTC)
    return value


def _parse_rfc822(text: str) -> datetime | None:
    try:
        value = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    # An RFC 822 date must name its zone; without one the time is unknowable.
    return value if value.tzinfo else None

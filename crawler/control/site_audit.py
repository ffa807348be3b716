"""What the crawler did to one site over a window, from its own records: the answer to a site
owner's complaint. Pure: ``request_log`` rows (and ``robots_decisions`` rows) in, a JSON-ready
summary out; ``scrapy audit`` and the API both print it.

- requests, and their statuses or errors;
- the gaps between request starts, each judged against the delay that applied to it (below): the
  smallest, and every gap shorter than its delay by more than ``delay_tolerance``;
- the most requests in flight at once;
- each 429, and how long the crawler waited after it before the next request;
- robots.txt decisions grouped by the rule that made them.

How a gap is judged. A request starts when it left for the network, and its delay in force is
the domain's delay at that moment (``request_log.delay_in_force``) as the process that sent it
knew it (in a shared crawl, its copy of the domain's shared state). Taken in the order they
started, whichever process sent them, each request B after a request A makes a gap: B's start
less A's. The gap is judged against B's delay: a request leaves once the delay in force *as it
leaves* has passed since the domain's last request left (the download handler asks for the delay
again until then), so a delay that fell after A left (robots.txt read, a probe down) lets B go
sooner, and one that rose (a 429 learned from) holds B longer. The gap is short when it is less
than B's delay by more than the tolerance: ``gap < delay - tolerance``, counted in whole
microseconds (the resolution of the stored times), so that a gap exactly at ``delay - tolerance``
is not short whatever floating point makes of the numbers. Not judged: a gap whose B has no
recorded delay, and the first request of the window (the one before it lies outside). Requests
that started at the same microsecond make a gap of 0, and are taken in the order of their URLs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from crawler.storage.values import unix_time

MAX_LISTED = 20
"""Violations and 429s listed one by one at most; the counts are always complete."""


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    url: str
    started: float
    ended: float | None
    status: int | None
    outcome: str
    delay: float | None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> LoggedRequest:
        ended = row.get("ended_at")
        delay = row.get("delay_in_force")
        return cls(
            row["url"],
            seconds(row["started_at"]),
            None if ended is None else seconds(ended),
            row.get("http_status"),
            row.get("outcome") or "",
            None if delay is None else float(delay),
        )


@dataclass(frozen=True, slots=True)
class Gap:
    """The time between two consecutive starts, and the delay it is judged against (``before``'s)."""

    after: LoggedRequest
    before: LoggedRequest

    @property
    def micros(self) -> int:
        """Whole microseconds, the resolution of the stored times."""
        return _micros(self.before.started) - _micros(self.after.started)

    @property
    def seconds(self) -> float:
        return self.micros / 1e6

    @property
    def delay(self) -> float | None:
        return self.before.delay

    def short(self, tolerance: float) -> bool:
        """Shorter than its delay by more than ``tolerance``; never when the delay is unknown."""
        return self.delay is not None and self.micros < _micros(self.delay) - _micros(tolerance)


def in_start_order(rows: Iterable[Mapping[str, Any]]) -> list[LoggedRequest]:
    """``request_log`` rows as requests, by start (rows of the same start by URL)."""
    return sorted((LoggedRequest.of(row) for row in rows), key=lambda r: (r.started, r.url))


def gaps_between(requests: list[LoggedRequest]) -> list[Gap]:
    """The gap between each request and the next, of requests in start order."""
    return [Gap(a, b) for a, b in zip(requests, requests[1:])]


def summarize(
    rows: Iterable[Mapping[str, Any]], delay_tolerance: float, robots_decisions: Iterable[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """``rows`` are ``request_log`` rows as mappings of column names (times as datetimes, ISO
    text or Unix seconds); ``robots_decisions`` are rows with ``url``, ``allowed`` and
    ``matched_rule``."""
    requests = in_start_order(rows)
    gaps = gaps_between(requests)
    short = [gap for gap in gaps if gap.short(delay_tolerance)]
    in_flight, in_flight_at = max_in_flight(requests)
    refusals = [_refusal(r, requests) for r in requests if r.status == 429]
    return {
        "requests": len(requests),
        "first_start": iso_time(requests[0].started) if requests else None,
        "last_start": iso_time(requests[-1].started) if requests else None,
        "outcomes": dict(sorted(Counter(_outcome(r) for r in requests).items())),
        "smallest_gap": _gap(min(gaps, key=lambda g: g.seconds)) if gaps else None,
        "delay_tolerance": delay_tolerance,
        "gaps_under_delay": len(short),
        "gaps_under_delay_listed": [_gap(gap) for gap in short[:MAX_LISTED]],
        "max_in_flight": in_flight,
        "max_in_flight_at": None if in_flight_at is None else iso_time(in_flight_at),
        "responses_429": len(refusals),
        "responses_429_listed": refusals[:MAX_LISTED],
        "robots": robots_summary(robots_decisions),
    }


def max_in_flight(requests: list[LoggedRequest]) -> tuple[int, float | None]:
    """The most requests in flight at once and when that began; a request without an end is
    in flight to the end of the window. One ending as another starts does not overlap it."""
    events = sorted(
        [(r.started, 1) for r in requests] + [(r.ended, -1) for r in requests if r.ended is not None],
        key=lambda event: (event[0], event[1]),  # ends before starts at the same time
    )
    most, at, current = 0, None, 0
    for time, change in events:
        current += change
        if current > most:
            most, at = current, time
    return most, at


def robots_summary(decisions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Decisions grouped by outcome and rule, most frequent first, each with one example URL."""
    groups: dict[tuple[bool, str | None], list[str]] = {}
    for decision in decisions:
        groups.setdefault((bool(decision["allowed"]), decision.get("matched_rule")), []).append(decision["url"])
    return [
        {"allowed": allowed, "rule": rule, "decisions": len(urls), "example": urls[0]}
        for (allowed, rule), urls in sorted(
            groups.items(), key=lambda item: (-len(item[1]), not item[0][0], item[0][1] or "")
        )
    ]


def _gap(gap: Gap) -> dict[str, Any]:
    return {
        "seconds": gap.seconds,
        "delay_in_force": gap.delay,
        "at": iso_time(gap.before.started),
        "after": gap.after.url,
        "before": gap.before.url,
    }


def _refusal(refused: LoggedRequest, requests: list[LoggedRequest]) -> dict[str, Any]:
    end = refused.ended if refused.ended is not None else refused.started
    following = [r.started for r in requests if r.started >= end and r is not refused]
    return {"url": refused.url, "at": iso_time(end), "waited": round(min(following) - end, 6) if following else None}


def _outcome(request: LoggedRequest) -> str:
    return str(request.status) if request.status is not None else request.outcome


def seconds(value: datetime | str | float) -> float:
    """Unix seconds of a time as PostgreSQL (datetime), SQLite (ISO text) or a clock gives it."""
    return float(value) if isinstance(value, int | float) else unix_time(value)  # type: ignore[return-value]


def _micros(seconds: float) -> int:
    return round(seconds * 1_000_000)


def iso_time(time: float) -> str:
    """Unix seconds as ISO 8601 text in UTC, as the summary gives times."""
    return datetime.fromtimestamp(time, UTC).isoformat()

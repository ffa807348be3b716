"""Crawl-wide figures from what crawl processes publish (``workers`` rows and their
``stats_samples``): totals, rates by difference, the time series of the charts and seed 002's
alerts. Pure: rows in, numbers out, times as epoch seconds given by the caller."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

PAGES = "response_received_count"
STATUS_PREFIX = "downloader/response_status_count/"
LIVE_STATES = frozenset({"running", "paused", "closing"})
ERROR_RATE_THRESHOLD = 0.20
ERROR_RATE_MINUTES = 5
BACKLOG_GROWTH = 0.10

Stats = Mapping[str, float]


@dataclass(frozen=True, slots=True)
class Sample:
    worker_id: str
    at: float
    stats: Stats


@dataclass(frozen=True, slots=True)
class Point:
    at: float
    """The end of the interval."""
    seconds: float
    pages: float
    statuses: dict[str, float] = field(default_factory=dict)
    frontier: float | None = None
    """Requests scheduled and not yet handed out, summed over the processes (None: no sample)."""

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.seconds

    @property
    def errors(self) -> float:
        return sum(n for status, n in self.statuses.items() if status[:1] in ("4", "5"))

    @property
    def responses(self) -> float:
        return sum(self.statuses.values())


def numeric(stats: Mapping[str, Any]) -> dict[str, float]:
    """The counters of a stats mapping that are numbers (booleans are not counters)."""
    return {k: float(v) for k, v in stats.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def totals(stats: Iterable[Stats]) -> dict[str, float]:
    total: dict[str, float] = {}
    for one in stats:
        for key, value in one.items():
            total[key] = total.get(key, 0.0) + value
    return total


def statuses(stats: Stats) -> dict[str, float]:
    return {key[len(STATUS_PREFIX) :]: value for key, value in stats.items() if key.startswith(STATUS_PREFIX)}


def frontier_size(stats: Stats) -> float:
    """Scheduled minus handed out, as Scrapy's scheduler (and scrapy-redis's, ``/redis``) count them."""
    enqueued = stats.get("scheduler/enqueued", 0.0) or stats.get("scheduler/enqueued/redis", 0.0)
    dequeued = stats.get("scheduler/dequeued", 0.0) or stats.get("scheduler/dequeued/redis", 0.0)
    return max(0.0, enqueued - dequeued)


def is_live(state: str, heartbeat_at: float, now: float, timeout: float) -> bool:
    return state in LIVE_STATES and now - heartbeat_at <= timeout


def series(samples: Iterable[Sample], start: float, end: float, step: float) -> list[Point]:
    """Intervals of ``step`` seconds from ``start`` to ``end``: counters summed over processes,
    each process counted by difference between its last samples at the two ends of an interval
    (a process's first sample is its baseline)."""
    if step <= 0 or end <= start:
        return []
    by_worker: dict[str, list[Sample]] = {}
    for sample in sorted(samples, key=lambda s: s.at):
        by_worker.setdefault(sample.worker_id, []).append(sample)
    timelines = {worker: [s.at for s in rows] for worker, rows in by_worker.items()}
    count = int((end - start) // step)
    bounds = [end - step * (count - k) for k in range(count + 1)]
    points = []
    for before, after in zip(bounds, bounds[1:]):
        pages = 0.0
        mix: dict[str, float] = {}
        frontier: float | None = None
        for name, worker in by_worker.items():
            times = timelines[name]
            old, new = _at(worker, times, before), _at(worker, times, after)
            if new is None:
                continue
            frontier = (frontier or 0.0) + frontier_size(new.stats)
            old = old or worker[0]  # a process that started in the interval counts from its first sample
            pages += max(0.0, new.stats.get(PAGES, 0.0) - old.stats.get(PAGES, 0.0))
            for status, value in statuses(new.stats).items():
                delta = max(0.0, value - old.stats.get(STATUS_PREFIX + status, 0.0))
                if delta:
                    mix[status] = mix.get(status, 0.0) + delta
        points.append(Point(after, step, pages, mix, frontier))
    return points


def _at(samples: list[Sample], times: list[float], moment: float) -> Sample | None:
    index = bisect.bisect_right(times, moment)
    return samples[index - 1] if index else None


@dataclass(frozen=True, slots=True)
class Alert:
    name: str
    message: str


def alerts(per_minute: list[Point], stale_workers: Iterable[str], heartbeat_timeout: float) -> list[Alert]:
    """Seed 002's alerts from per-minute points (oldest first) and the workers whose heartbeat
    stopped: 4xx/5xx over 20% in each of the last 5 minutes, a frontier grown by more than 10%
    in the last minute, a worker silent for longer than the heartbeat timeout."""
    found = []
    recent = per_minute[-ERROR_RATE_MINUTES:]
    if len(recent) == ERROR_RATE_MINUTES and all(
        p.responses and p.errors / p.responses > ERROR_RATE_THRESHOLD for p in recent
    ):
        rate = sum(p.errors for p in recent) / sum(p.responses for p in recent)
        found.append(
            Alert("high_error_rate", f"{rate:.0%} of responses were 4xx/5xx over the last {ERROR_RATE_MINUTES} minutes")
        )
    if len(per_minute) >= 2:
        previous, latest = per_minute[-2].frontier, per_minute[-1].frontier
        if previous and latest is not None and (latest - previous) / previous > BACKLOG_GROWTH:
            found.append(
                Alert(
                    "frontier_backlog",
                    f"the frontier grew {(latest - previous) / previous:.0%} in the last minute ({previous:.0f} to {latest:.0f})",
                )
            )
    for worker in stale_workers:
        found.append(Alert("worker_crash", f"worker {worker} has sent no heartbeat for over {heartbeat_timeout:.0f} s"))
    return found

"""Crawl-wide figures from what crawl processes publish (``workers`` rows and their
``stats_samples``): totals, rates by difference, the time series of the charts and seed 002's
alerts. Pure: rows in, numbers out, times as epoch seconds given by the caller."""

from __future__ import annotations

import bisect
import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

PAGES = "response_received_count"
STATUS_PREFIX = "downloader/response_status_count/"
LIVE_STATES = frozenset({"running", "paused", "closing"})
ERROR_RATE_THRESHOLD = 0.20
ERROR_RATE_MINUTES = 5
BACKLOG_GROWTH = 0.10
NICE_FACTORS = (1.0, 2.0, 5.0)

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
    pages_per_second: float
    """Each process's pages over the seconds its samples cover, summed (see ``series``)."""
    statuses: dict[str, float] = field(default_factory=dict)
    frontier: float | None = None
    """Requests scheduled and not yet handed out, summed over the processes (None: no sample)."""

    @property
    def errors(self) -> float:
        return sum(n for status, n in self.statuses.items() if status[:1] in ("4", "5"))

    @property
    def responses(self) -> float:
        return sum(self.statuses.values())


@dataclass(frozen=True, slots=True)
class Chart:
    points: list[Point]
    pages_per_second_scale: float
    responses_scale: float


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


def series(
    samples: Iterable[Sample], start: float, end: float, step: float, stopped: Collection[str] = ()
) -> list[Point]:
    """Intervals of ``step`` seconds from ``start`` to ``end``, counters summed over processes.

    A process counts by difference between its last samples at the two ends of an interval (its
    first sample is its baseline), and its rate is over the seconds between those two samples:
    a process younger than the interval, or whose latest heartbeat is not in yet, is not divided
    by the whole interval. A process in ``stopped`` (finished, or silent) sent nothing after its
    last sample because it stopped: from there its rate runs to the end of the interval."""
    if step <= 0 or end <= start:
        return []
    timelines = _timelines(samples)
    count = int((end - start) // step)
    bounds = [end - step * (count - k) for k in range(count + 1)]
    points = []
    for before, after in zip(bounds, bounds[1:]):
        pages = rate = 0.0
        mix: dict[str, float] = {}
        frontier: float | None = None
        for worker, timeline in timelines.items():
            ends = timeline.ends(before, after)
            if ends is None:
                continue
            old, new = ends
            frontier = (frontier or 0.0) + frontier_size(new.stats)
            grown = max(0.0, new.stats.get(PAGES, 0.0) - old.stats.get(PAGES, 0.0))
            covered = (after if worker in stopped and new is timeline.samples[-1] else new.at) - old.at
            pages += grown
            rate += grown / covered if covered > 0 else 0.0
            for status, value in statuses(new.stats).items():
                mix[status] = mix.get(status, 0.0) + max(0.0, value - old.stats.get(STATUS_PREFIX + status, 0.0))
        points.append(Point(after, step, pages, rate, {k: v for k, v in mix.items() if v}, frontier))
    return points


@dataclass(slots=True)
class _Timeline:
    """One process's samples in time order."""

    samples: list[Sample]
    times: list[float]

    def ends(self, before: float, after: float) -> tuple[Sample, Sample] | None:
        """The samples an interval is counted between: the last at or before each end, the
        first sample for a process that started within the interval (None: not started yet)."""
        new = self._at(after)
        return None if new is None else (self._at(before) or self.samples[0], new)

    def _at(self, moment: float) -> Sample | None:
        index = bisect.bisect_right(self.times, moment)
        return self.samples[index - 1] if index else None


def _timelines(samples: Iterable[Sample]) -> dict[str, _Timeline]:
    by_worker: dict[str, list[Sample]] = {}
    for sample in sorted(samples, key=lambda s: s.at):
        by_worker.setdefault(sample.worker_id, []).append(sample)
    return {worker: _Timeline(rows, [s.at for s in rows]) for worker, rows in by_worker.items()}


def success_rate(points: list[Point]) -> float | None:
    """2xx and 3xx among the responses of the last five points (minutes); None without responses."""
    recent = points[-ERROR_RATE_MINUTES:]
    responses = sum(p.responses for p in recent)
    return None if not responses else 1 - sum(p.errors for p in recent) / responses


def chart(samples: Iterable[Sample], now: float, seconds: float, step: float, stopped: Collection[str] = ()) -> Chart:
    """The ``seconds`` up to ``now`` in intervals of ``step`` aligned on multiples of ``step``,
    the last one ending at or before ``now``: an interval, once over, keeps its figures from one
    refresh to the next, and so does the scale, a nice ceiling of the highest point."""
    end = math.floor(now / step) * step
    points = series(samples, end - seconds, end, step, stopped)
    highest = max((p.pages_per_second for p in points), default=0.0)
    busiest = max((p.responses for p in points), default=0.0)
    return Chart(points, nice_ceiling(highest), nice_ceiling(busiest))


def nice_ceiling(value: float) -> float:
    """The least of 1, 2 and 5 times a power of ten that is at least ``value`` (1 for nothing)."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for factor in NICE_FACTORS:
        if factor * power >= value * (1 - 1e-9):
            return round(factor * power, 12)
    return round(10 * power, 12)


@dataclass(frozen=True, slots=True)
class Alert:
    name: str
    message: str
    public_message: str | None = None
    """The message for anonymous callers where ``message`` names a process (its host, PID, job)."""

    def told(self, named: bool) -> str:
        return self.message if named or self.public_message is None else self.public_message


HIGH_ERROR_RATE, FRONTIER_BACKLOG, WORKER_CRASH = "high_error_rate", "frontier_backlog", "worker_crash"
ALERT_NAMES = (HIGH_ERROR_RATE, FRONTIER_BACKLOG, WORKER_CRASH)


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
            Alert(HIGH_ERROR_RATE, f"{rate:.0%} of responses were 4xx/5xx over the last {ERROR_RATE_MINUTES} minutes")
        )
    if len(per_minute) >= 2:
        previous, latest = per_minute[-2].frontier, per_minute[-1].frontier
        if previous and latest is not None and (latest - previous) / previous > BACKLOG_GROWTH:
            found.append(
                Alert(
                    FRONTIER_BACKLOG,
                    f"the frontier grew {(latest - previous) / previous:.0%} in the last minute ({previous:.0f} to {latest:.0f})",
                )
            )
    for worker in stale_workers:
        silent = f"sent no heartbeat for over {heartbeat_timeout:.0f} s"
        found.append(Alert(WORKER_CRASH, f"worker {worker} has {silent}", f"a worker has {silent}"))
    return found

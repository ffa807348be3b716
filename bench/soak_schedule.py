"""When the soak's faults happen: pure arithmetic on the run's length, no I/O.

Two tracks run side by side: the processes' faults (a worker killed, a worker stopped, Redis
restarted, PostgreSQL restarted, the database unreachable), one at a time, and the sites'
faults (a site down, a site slowed to 1 byte a second), one at a time. Each kind comes
``repeats`` times, kinds interleaved, spread evenly between the warm-up and the quiet tail
(no fault in the last stretch, so that leases taken at the last one have expired and their
requests were fetched again before the run ends).
"""

from __future__ import annotations

from dataclasses import dataclass

PROCESS_FAULTS = ("worker_killed", "worker_stopped", "redis_restarted", "postgres_restarted", "postgres_unreachable")
SITE_FAULTS = ("site_down", "site_trickle")
SETTLE = 10.0
"""Seconds between the end of one fault and the start of the next on a track."""


@dataclass(frozen=True, slots=True)
class Fault:
    kind: str
    start: float
    """Seconds after the run's start."""
    duration: float
    target: int = 0
    """Which worker (worker faults), counted from 0."""

    @property
    def end(self) -> float:
        return self.start + self.duration


@dataclass(frozen=True, slots=True)
class Durations:
    lease: float
    connect_timeout: float
    site_outage: float

    def of(self, kind: str) -> float:
        """How long a fault of ``kind`` lasts: a stop longer than the leases, the database away
        longer than a starting worker waits for it."""
        return {
            "worker_killed": 0.0,
            "worker_stopped": self.lease * 1.5,
            "redis_restarted": 0.0,
            "postgres_restarted": 0.0,
            "postgres_unreachable": self.connect_timeout * 1.5,
            "site_down": self.site_outage,
            "site_trickle": self.site_outage,
        }[kind]


def repeats(minutes: float) -> int:
    """Each fault once in a short run; in runs of 20 minutes and more, once per 30 minutes and
    at least twice."""
    return 1 if minutes < 20 else max(2, int(minutes // 30))


def plan(seconds: float, durations: Durations, workers: int, warm_up: float, tail: float) -> list[Fault]:
    """Every fault of the run, in order of start."""
    count = repeats(seconds / 60)
    faults = _track(PROCESS_FAULTS * count, warm_up, seconds - tail, durations, workers)
    faults += _track(SITE_FAULTS * count, warm_up, seconds - tail, durations, workers)
    return sorted(faults, key=lambda fault: fault.start)


def _track(kinds: tuple[str, ...], begin: float, end: float, durations: Durations, workers: int) -> list[Fault]:
    """``kinds`` spread evenly over [begin, end), each starting after the previous one ended."""
    step = (end - begin) / len(kinds)
    faults: list[Fault] = []
    for i, kind in enumerate(kinds):
        start = begin + i * step
        if faults:
            start = max(start, faults[-1].end + SETTLE)
        faults.append(Fault(kind, start, durations.of(kind), target=i % workers))
    return faults

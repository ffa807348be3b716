"""The adaptive revisit schedule: when each page is due again. Pure: no I/O, times are Unix
seconds from an injected clock.

As Nutch's ``AdaptiveFetchSchedule`` and StormCrawler's ``AdaptiveScheduler``: a visit that
finds the page unchanged lengthens its interval by ``grow`` (40 %), one that finds it changed
shortens it by ``shrink`` (20 %), within ``[min_interval, max_interval]``. Once a page has been
revisited a few times, the interval is also kept within a factor of two of the mean time
between changes estimated from those revisits, with Cho and Garcia-Molina's estimator of a
Poisson change rate ("Estimating frequency of change", 2003), so that a long run of one kind of
answer does not push the interval far from what the page's history supports.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

CHANGEFREQ_SECONDS = {
    "always": 0.0,
    "hourly": 3600.0,
    "daily": 86_400.0,
    "weekly": 7 * 86_400.0,
    "monthly": 30 * 86_400.0,
    "yearly": 365 * 86_400.0,
    "never": math.inf,
}
"""A sitemap's ``changefreq`` as a first interval: a hint only, which the visits then correct."""

ESTIMATE_AFTER_REVISITS = 3
"""Revisits before the change-rate estimate bounds the interval: fewer say too little."""


@dataclass(frozen=True, slots=True)
class RevisitPolicy:
    min_interval: float
    """Seconds; 0 makes every known page due at every crawl."""
    max_interval: float
    initial_interval: float
    """The interval after a page's first fetch, when no sitemap ``changefreq`` hints otherwise."""
    grow: float = 0.4
    shrink: float = 0.2

    def __post_init__(self) -> None:
        if not 0 <= self.min_interval <= self.max_interval:
            raise ValueError(
                f"the revisit intervals must satisfy 0 <= minimum <= maximum, got {self.min_interval} and {self.max_interval}"
            )
        if self.grow < 0 or not 0 <= self.shrink < 1:
            raise ValueError(f"grow must be >= 0 and shrink within [0, 1), got {self.grow} and {self.shrink}")

    def bounded(self, interval: float) -> float:
        return min(max(interval, self.min_interval), self.max_interval)


@dataclass(frozen=True, slots=True)
class History:
    """What the stored row says about a page's earlier visits."""

    interval: float | None
    revisits: int = 0
    """Visits after the first that got an answer, each of which could see a change."""
    changes: int = 0
    """Of those, the visits that found the page changed."""


@dataclass(frozen=True, slots=True)
class Revisit:
    """The schedule after a visit: what the row stores."""

    interval: float
    next_at: float
    revisits: int
    changes: int


def change_rate(revisits: int, changes: int, interval: float) -> float | None:
    """Changes per second by Cho and Garcia-Molina's estimator for ``revisits`` visits about
    ``interval`` seconds apart, of which ``changes`` saw a change: ``-ln((n - X + 0.5) / (n + 0.5)) / I``.
    Unlike ``X / (n I)`` it stays finite when every visit saw a change and is far less biased
    when changes come faster than visits. None when there is nothing to estimate from."""
    if revisits <= 0 or interval <= 0:
        return None
    if not 0 <= changes <= revisits:
        raise ValueError(f"changes ({changes}) must be between 0 and the revisits ({revisits})")
    return -math.log((revisits - changes + 0.5) / (revisits + 0.5)) / interval


class RevisitSchedule:
    def __init__(self, policy: RevisitPolicy, clock: Callable[[], float]):
        self.policy = policy
        self.clock = clock

    def first_visit(self, changefreq: str | None = None) -> Revisit:
        """The schedule of a page fetched for the first time."""
        hint = CHANGEFREQ_SECONDS.get((changefreq or "").strip().lower(), self.policy.initial_interval)
        interval = self.policy.bounded(hint)
        return Revisit(interval, self.clock() + interval, 0, 0)

    def after_visit(self, history: History | None, changed: bool, changefreq: str | None = None) -> Revisit:
        """The schedule of a page just visited, which ``changed`` or not since the last visit."""
        if history is None or history.interval is None:
            return self.first_visit(changefreq)
        revisits, changes = history.revisits + 1, history.changes + int(changed)
        step = 1 - self.policy.shrink if changed else 1 + self.policy.grow
        interval = max(history.interval, 1.0) * step  # a zero interval (a minimum of 0) must still grow
        rate = change_rate(revisits, changes, history.interval) if revisits >= ESTIMATE_AFTER_REVISITS else None
        if rate:  # a rate of 0 (never seen changing) bounds nothing
            mean_time_between_changes = 1 / rate
            interval = min(max(interval, mean_time_between_changes / 2), mean_time_between_changes * 2)
        interval = self.policy.bounded(interval)
        return Revisit(interval, self.clock() + interval, revisits, changes)

    def is_due(self, next_at: float | None, last_visit: float | None, sitemap_lastmod: float | None = None) -> bool:
        """Whether a known page is due now: its time has come, the maximum interval has passed
        since its last visit (a lowered maximum counts at once), or its sitemap says it changed
        after that visit. With a minimum interval of 0 every page is due."""
        if self.policy.min_interval <= 0 or next_at is None:
            return True
        if last_visit is not None:
            if sitemap_lastmod is not None and sitemap_lastmod > last_visit:
                return True
            next_at = min(next_at, last_visit + self.policy.max_interval)
        return self.clock() >= next_at

"""Sliding-window rate limits per client and tier: pure, with an injected clock.

A window log (the start times of the requests accepted in the last window) is exact where a
fixed window lets twice the limit through across a boundary; at these limits (hundreds a
minute) the log stays small. Refused requests are not counted, so a client that keeps
knocking is let in again as soon as its oldest accepted request leaves the window.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    remaining: int
    retry_after: int
    """Whole seconds until a request would be accepted (0 when allowed), for ``Retry-After``."""


class SlidingWindowLimiter:
    def __init__(self, limit: int, window: float, clock: Callable[[], float]):
        if limit < 1 or window <= 0:
            raise ValueError("a rate limit needs a positive limit and window")
        self.limit = limit
        self.window = window
        self.clock = clock
        self._accepted: dict[str, deque[float]] = {}

    def hit(self, key: str) -> Decision:
        """Count a request of ``key`` if it is within the limit."""
        now = self.clock()
        log = self._accepted.setdefault(key, deque())
        self._expire(log, now)
        if len(log) >= self.limit:
            wait = log[0] + self.window - now
            return Decision(False, 0, max(1, math.ceil(wait)))
        log.append(now)
        return Decision(True, self.limit - len(log), 0)

    def undo(self, key: str) -> None:
        """Uncount the latest request of ``key``: it turned out not to count (a login that
        succeeded, where only failures do). Counting first and undoing after keeps concurrent
        attempts from all passing a check made before any of them was counted."""
        log = self._accepted.get(key)
        if log:
            log.pop()

    def forget_idle(self) -> int:
        """Drop clients with nothing left in their window (bounded memory); how many."""
        now = self.clock()
        idle = [key for key, log in self._accepted.items() if not log or log[-1] <= now - self.window]
        for key in idle:
            del self._accepted[key]
        return len(idle)

    def __len__(self) -> int:
        return len(self._accepted)

    def _expire(self, log: deque[float], now: float) -> None:
        horizon = now - self.window
        while log and log[0] <= horizon:
            log.popleft()


class TieredLimits:
    """One limiter per tier (``anonymous``, ``user``, ``admin``, ``seed`` …), one clock."""

    def __init__(self, limits: dict[str, int], window: float, clock: Callable[[], float]):
        self.tiers = {tier: SlidingWindowLimiter(limit, window, clock) for tier, limit in limits.items()}

    def hit(self, tier: str, key: str) -> Decision:
        return self.tiers[tier].hit(key)

    def forget_idle(self) -> int:
        return sum(limiter.forget_idle() for limiter in self.tiers.values())

"""New URLs a site's pages may add to the frontier: a token bucket per site, ``rate`` a second
up to ``burst`` at once (a first page links to most of a small site at once). Pure arithmetic
with the clock passed in; ``rate.lua`` is the same for a shared crawl."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


class TokenBuckets:
    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic):
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self._buckets: dict[str, _Bucket] = {}

    async def take(self, site: str, wanted: int) -> int:
        """How many of ``wanted`` new URLs the pages of ``site`` may add now."""
        return self.take_at(site, wanted, self.clock())

    def take_at(self, site: str, wanted: int, now: float) -> int:
        """How many of ``wanted`` new URLs the pages of ``site`` may add at ``now``."""
        bucket = self._buckets.get(site)
        if bucket is None:
            bucket = self._buckets[site] = _Bucket(float(self.burst), now)
        bucket.tokens = min(float(self.burst), bucket.tokens + max(0.0, now - bucket.at) * self.rate)
        bucket.at = now
        granted = min(wanted, int(bucket.tokens))
        bucket.tokens -= granted
        return granted

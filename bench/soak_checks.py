"""The soak's invariants on what the web server logged, fed in order of start and judged with
the crawler's own stamps where the server's view alone cannot tell: pure, no I/O.

- Spacing: two starts on one host closer than its delay (less a tolerance) are a short gap;
  with the crawler's departure stamps beside them, a gap the crawler left whole (the server read
  the second request late, or the first one early) is counted apart, and a gap short at the
  crawler is a violation.
- Duplicates: a page sent whole (200 or 304) twice within the re-crawl interval.
- Blocks: after a 429 with ``Retry-After``, a request to that host that left the crawler after
  it received the 429 and before the block ended.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from bench.realweb import ServedRequest
from bench.soak_web import SoakRequest

TOLERANCE = 0.010
"""nginx logs to the millisecond; so does the comparison."""
NOT_PAGES = ("/robots.txt",)


@dataclass(frozen=True, slots=True)
class Stamp:
    """A request as the crawler's request log has it (Unix times)."""

    departed: float
    received: float | None


@dataclass(frozen=True, slots=True)
class Pair:
    """Two requests to one host the server saw: a short gap, or a hit after a 429."""

    host: str
    first: ServedRequest
    second: ServedRequest
    bound: float
    """The delay (short gap) or the block (429) the second one had to wait."""


@dataclass
class SpacingCheck:
    delay_of: Callable[[str], float]
    gaps: int = 0
    _last: dict[str, ServedRequest] = field(default_factory=dict)

    def feed(self, requests: Iterable[SoakRequest]) -> list[Pair]:
        """The short gaps among ``requests`` (in order of start) and those before them."""
        short = []
        for request in requests:
            served = request.served
            previous = self._last.get(served.host)
            self._last[served.host] = served
            if previous is None:
                continue
            self.gaps += 1
            delay = self.delay_of(served.host)
            if served.start - previous.start < delay - TOLERANCE:
                short.append(Pair(served.host, previous, served, delay))
        return short


def nearest(times: list[float], to: float) -> float | None:
    """The one of ``times`` nearest to ``to`` (a server's reading of a request: the crawler's
    stamp of it is the one of its URL closest in time); None of none."""
    return min(times, key=lambda at: abs(at - to), default=None)


def judge_gap(pair: Pair, first: Stamp, second: Stamp) -> str:
    """``late_read`` when the crawler left the delay whole, else ``violation``."""
    return "late_read" if second.departed - first.departed >= pair.bound - TOLERANCE else "violation"


@dataclass
class DuplicateCheck:
    interval: float
    """No page may be sent whole twice within this (the re-crawl's shortest interval)."""
    fetches: int = 0
    _last: dict[tuple[str, str], float] = field(default_factory=dict)

    def feed(self, requests: Iterable[SoakRequest]) -> list[Pair]:
        duplicates = []
        for request in requests:
            served = request.served
            if not request.complete or served.status not in (200, 304) or served.path in NOT_PAGES:
                continue
            self.fetches += 1
            key = (served.host, served.path)
            previous = self._last.get(key)
            self._last[key] = served.start
            if previous is not None and served.start - previous < self.interval:
                first = ServedRequest(served.host, "", previous, previous, 200, 0, "GET", served.path, "")
                duplicates.append(Pair(served.host, first, served, self.interval))
        return duplicates

    def fetched(self) -> set[tuple[str, str]]:
        """Every (host, path) sent whole at least once."""
        return set(self._last)


@dataclass
class BlockCheck:
    block: float
    """The ``Retry-After`` of the server's 429s."""
    blocked_hosts: frozenset[str]
    answers: int = 0
    _last_429: dict[str, ServedRequest] = field(default_factory=dict)

    def feed(self, requests: Iterable[SoakRequest]) -> list[Pair]:
        """Requests that arrived while a 429 of their host was fresh: the crawler may have sent
        them before it read that 429 (in flight), which only its stamps tell."""
        hits = []
        for request in requests:
            served = request.served
            if served.host not in self.blocked_hosts:
                continue
            answer = self._last_429.get(served.host)
            if answer is not None and answer.end < served.start < answer.end + self.block - TOLERANCE:
                hits.append(Pair(served.host, answer, served, self.block))
            if served.status == 429:
                self.answers += 1
                self._last_429[served.host] = served
        return hits


def judge_hit(pair: Pair, answer: Stamp, hit: Stamp) -> str:
    """``in_flight`` when the request left before the crawler received the 429, ``violation``
    when it left within the block after."""
    received = answer.received if answer.received is not None else answer.departed
    if hit.departed < received:
        return "in_flight"
    return "violation" if hit.departed < received + pair.bound - TOLERANCE else "after_block"


def slope_per_hour(samples: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (seconds, value) samples, per hour; None with fewer than 3."""
    if len(samples) < 3:
        return None
    n = len(samples)
    mean_t = sum(t for t, _ in samples) / n
    mean_v = sum(v for _, v in samples) / n
    spread = sum((t - mean_t) ** 2 for t, _ in samples)
    if spread == 0:
        return None
    return sum((t - mean_t) * (v - mean_v) for t, v in samples) / spread * 3600


def percentile(values: list[float], fraction: float) -> float | None:
    """The nearest-rank percentile; None of nothing."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]

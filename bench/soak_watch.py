"""The soak's invariants checked throughout: the web server's log read as it grows, each
request judged once it is old enough that every earlier start of its host has been logged, and
the pairs the server's view cannot settle judged with the crawler's stamps once they are
stored (a database outage delays them; a pair still without stamps after ``STAMP_PATIENCE``
counts against the crawler). A request whose row died with a killed worker is stamped from the
workers' departure log instead."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from bench.soak_checks import BlockCheck, DuplicateCheck, Pair, SpacingCheck, judge_gap, judge_hit
from bench.soak_db import SoakDatabase
from bench.soak_departures import DepartureStamps
from bench.soak_web import RETRY_AFTER, SoakRequest, SoakWeb

SETTLED = 90.0
"""Seconds after which a request's host has logged every request that started before it (a
download lasts 30 s at most, ``DOWNLOAD_TIMEOUT``, and nginx logs a request when it ends)."""
STAMP_PATIENCE = 600.0


@dataclass
class Waiting:
    pair: Pair
    kind: str
    """``gap`` or ``hit``."""
    since: float


@dataclass
class Watch:
    web: SoakWeb
    database: SoakDatabase
    departures: DepartureStamps
    spacing: SpacingCheck
    duplicates: DuplicateCheck
    blocks: BlockCheck
    outcomes: Counter[str] = field(default_factory=Counter)
    """``gap/late_read``, ``gap/violation``, ``gap/unstamped``, ``hit/in_flight``, ``hit/violation``, …"""
    duplicate_pairs: list[Pair] = field(default_factory=list)
    violations: list[Pair] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    _offset: int = 0
    _unsettled: list[SoakRequest] = field(default_factory=list)
    _waiting: list[Waiting] = field(default_factory=list)

    @classmethod
    def of(cls, web: SoakWeb, database: SoakDatabase, departures: DepartureStamps, interval: float) -> Watch:
        return cls(
            web,
            database,
            departures,
            SpacingCheck(web.delay),
            DuplicateCheck(interval),
            BlockCheck(RETRY_AFTER, frozenset(web.roles["limited_429"])),
        )

    def check(self, final: bool = False) -> None:
        """Read what the server logged since the last check and judge what has settled
        (everything when ``final``)."""
        logged, self._offset = self.web.read_from(self._offset)
        self._unsettled += logged
        cutoff = float("inf") if final else time.time() - SETTLED
        ready = sorted((r for r in self._unsettled if r.served.start < cutoff), key=lambda r: r.served.start)
        self._unsettled = [r for r in self._unsettled if r.served.start >= cutoff]
        self.statuses.update(r.served.status for r in ready)
        now = time.time()
        self._waiting += [Waiting(pair, "gap", now) for pair in self.spacing.feed(ready)]
        self._waiting += [Waiting(pair, "hit", now) for pair in self.blocks.feed(ready)]
        self.duplicate_pairs += self.duplicates.feed(ready)
        self._judge(final)

    def _judge(self, final: bool) -> None:
        if not self._waiting:
            return
        served = [request for waiting in self._waiting for request in (waiting.pair.first, waiting.pair.second)]
        stored = self.database.stamps(served)
        logged = [
            None if stamp else self.departures.stamp(request) for request, stamp in zip(served, stored, strict=True)
        ]
        still = []
        for i, waiting in enumerate(self._waiting):
            first, second = stored[2 * i] or logged[2 * i], stored[2 * i + 1] or logged[2 * i + 1]
            if first is None or second is None:
                if final or time.time() - waiting.since > STAMP_PATIENCE:
                    self._settle(waiting, "unstamped")
                else:
                    still.append(waiting)
                continue
            judge = judge_gap if waiting.kind == "gap" else judge_hit
            outcome = judge(waiting.pair, first, second)
            if outcome != "violation" and (logged[2 * i] or logged[2 * i + 1]):
                outcome += "_by_departure_log"  # counted apart: a killed worker's stamps
            self._settle(waiting, outcome)
        self._waiting = still

    def _settle(self, waiting: Waiting, outcome: str) -> None:
        self.outcomes[f"{waiting.kind}/{outcome}"] += 1
        if outcome in ("violation", "unstamped"):
            self.violations.append(waiting.pair)

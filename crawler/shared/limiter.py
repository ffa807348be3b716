"""The domain limiter with its state in Redis, shared by every process of the crawl.

The policy stays the pure one of ``crawler.politeness.policy``. Slots (reserve, sent, give back,
finish) are single script calls; outcomes (success, 429, failure, robots delay) read the
domain's state, apply the policy and write it back in one optimistic transaction, retried if
any process changed the domain meanwhile. What the frontier script needs of the policy's
verdict is written beside the state: the effective delay, the concurrency and the time until
which the domain is held (a 429 block or an open circuit), so a 429 seen by one process stops
every process at its next pop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, TypeVar

import redis

from crawler.politeness.limiter import DomainLimiter
from crawler.politeness.overrides import ControlTable
from crawler.politeness.policy import DomainState, Outcome, Policy
from crawler.shared.connection import REDIS_ERRORS
from crawler.shared.store import SharedFrontier

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Written by the frontier script, not part of the JSON state.
_SLOT_FIELDS = ("next", "prev", "last", "unsent")
_SLOT_ATTRIBUTES = ("next_start", "previous_next_start", "last_start", "unsent_until")
_TRANSIENT = frozenset({*_SLOT_ATTRIBUTES, "inflight"})
# A paused domain is held until an operator resumes it; a finite time, as the frontier script
# compares numbers (year 33658).
_PAUSED_HOLD = 1e12


class SharedDomainLimiter(DomainLimiter):
    def __init__(self, policy: Policy, frontier: SharedFrontier):
        super().__init__(policy, frontier.clock)
        self.frontier = frontier
        self.client = frontier.client
        self._warned_at = -1e9

    def _safely(self, operation: Callable[[], T], default: T) -> T:
        """Run a Redis operation; while Redis is away the crawl goes on without it: pacing
        updates are lost (the frontier hands nothing out meanwhile) and slots free themselves
        when their holders expire."""
        try:
            return operation()
        except REDIS_ERRORS as exc:
            now = time.monotonic()
            if now - self._warned_at > 10:
                self._warned_at = now
                logger.warning("Redis unavailable (%s): domain pacing is not updated", exc)
            return default

    # --- state -------------------------------------------------------------------------------
    def state(self, domain: str) -> DomainState:
        """A snapshot of the domain's shared state."""
        return self._safely(lambda: self._load(domain), DomainState())

    def _load(self, domain: str) -> DomainState:
        return _decode(self.client.hmget(self.frontier.domain_key(domain), "state", *_SLOT_FIELDS))

    def _apply(self, domain: str, change: Callable[[DomainState], T], default: T) -> T:
        return self._safely(lambda: self._transaction(domain, change), default)

    def _transaction(self, domain: str, change: Callable[[DomainState], T]) -> T:
        key = self.frontier.domain_key(domain)
        with self.client.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(key)
                    state = _decode(pipe.hmget(key, "state", *_SLOT_FIELDS))
                    self.controls.for_domain(domain).apply(state)  # every process obeys the latest it knows
                    result = change(state)
                    pipe.multi()
                    self.frontier.update(domain, self._fields(state), client=pipe)
                    pipe.execute()
                    return result
                except redis.WatchError:
                    continue  # another process changed the domain: apply to its new state

    def _fields(self, state: DomainState) -> dict[str, Any]:
        policy = self.policy
        learned = {k: v for k, v in asdict(state).items() if k not in _TRANSIENT}
        return {
            "state": json.dumps(learned, separators=(",", ":")),
            "next": f"{state.next_start:.6f}",
            "delay": repr(policy.effective_delay(state)),
            "limit": 1 if state.circuit_open_until is not None else policy.concurrency(state),
            "hold": repr(_PAUSED_HOLD if state.paused else max(state.blocked_until, state.circuit_open_until or 0.0)),
        }

    # --- slots -------------------------------------------------------------------------------
    def can_start(self, domain: str, now: float | None = None) -> bool:
        return self._safely(lambda: self._can_start(domain, self.clock() if now is None else now), False)

    def _can_start(self, domain: str, now: float) -> bool:
        state = self._load(domain)
        inflight = self.client.zcount(self.frontier.key("inflight", domain), now, "+inf")
        limit = 1 if state.circuit_open_until is not None else self.policy.concurrency(state)
        return not state.paused and now >= self.policy.ready_at(state) and inflight < limit

    def try_start(self, domain: str, holder: str = "") -> str | None:
        return self._safely(lambda: self.frontier.try_reserve(domain, holder), None)

    def sent(self, domain: str) -> float | None:
        delay = self._safely(lambda: self.frontier.sent(domain), None)
        self.may_be_ready(domain)
        return delay

    def unreserve(self, domain: str, reservation: Any) -> None:
        self._safely(lambda: self.frontier.unreserve(domain, str(reservation)), None)
        self.may_be_ready(domain)

    def finish(self, domain: str, holder: str = "") -> None:
        self._safely(lambda: self.frontier.finish(domain, holder), None)
        self.may_be_ready(domain)

    # --- outcomes ----------------------------------------------------------------------------
    def success(self, domain: str, latency: float | None = None) -> Outcome:
        outcome = self._apply(domain, lambda s: self.policy.on_success(s, self.clock(), latency), Outcome())
        self.may_be_ready(domain)
        return outcome

    def failure(self, domain: str) -> bool:
        return self._apply(domain, lambda s: self.policy.on_failure(s, self.clock()), False)

    def blocked(self, domain: str, retry_after: float | None = None) -> Outcome:
        return self._apply(domain, lambda s: self.policy.on_blocked(s, self.clock(), retry_after), Outcome())

    def set_robots_delay(self, domain: str, delay: float | None) -> None:
        self._apply(domain, lambda s: self.policy.set_robots_delay(s, delay, self.clock()), None)
        self.may_be_ready(domain)

    async def set_controls(self, controls: ControlTable) -> None:
        """Write the controls that changed into the shared state of the crawl's domains (off
        the reactor: one transaction per changed domain); new domains get them with their
        first change."""
        previous, self.controls = self.controls, controls

        def write() -> None:
            for name in self.client.smembers(self.frontier.key("domains")):
                domain = name.decode()
                if controls.for_domain(domain) != previous.for_domain(domain):
                    self._apply(domain, lambda state: None, None)

        await asyncio.to_thread(self._safely, write, None)

    async def reset(self, domain: str) -> DomainState:
        def reset(state: DomainState) -> DomainState:
            self.policy.reset(state)
            return state

        state = await asyncio.to_thread(self._apply, domain, reset, DomainState())
        self.may_be_ready(domain)
        return state

    def learned(self, domain: str, delay: float, floor: float) -> None:
        """Seed a domain with what earlier crawls learned, unless the running crawl has learned
        something of its own for it (another process was there first)."""

        def seed(state: DomainState) -> None:
            if not (state.learned_delay or state.floor):
                state.learned_delay, state.floor = delay, floor

        self._apply(domain, seed, None)


def _decode(fields: list[Any]) -> DomainState:
    state = DomainState(**json.loads(fields[0])) if fields[0] else DomainState()
    for attribute, value in zip(_SLOT_ATTRIBUTES, fields[1:], strict=True):
        if value is not None:
            setattr(state, attribute, float(value))
    return state

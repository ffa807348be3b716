"""The domain limiter: the policy applied to per-domain state kept in this process.

One per crawler (``CrawlServices.limiter``), shared by the frontier (which starts requests only
on ready domains), the limiter middleware (which records outcomes) and the robots.txt service
(which sets robots delays). ``RedisDomainLimiter`` keeps the same state in Redis for a shared
crawl. The clock is injectable; it is Unix time so that times stored in request meta
(``not_before``) mean the same thing everywhere.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Container
from typing import Any

from crawler.politeness.overrides import ControlTable
from crawler.politeness.policy import DomainState, Outcome, Policy


class DomainLimiter:
    shared = False
    """Whether other processes take the domains' slots too (they do not tell this one when)."""

    def __init__(self, policy: Policy, clock: Callable[[], float] = time.time):
        self.policy = policy
        self.clock = clock
        self.states: dict[str, DomainState] = {}
        self.controls = ControlTable()
        """Per-domain concurrency, minimum delay and pause chosen by people."""
        self.evicted_learning: dict[str, tuple[float, float]] = {}
        """Learned delay and floor of domains whose state was evicted, for when they return."""
        self._watchers: list[Callable[[str], None]] = []

    def watch(self, callback: Callable[[str], None]) -> None:
        """Have ``callback(domain)`` called when a domain may have become ready sooner than
        its ready time said: a slot finished or given back, a success, robots.txt rules."""
        self._watchers.append(callback)

    def unwatch(self, callback: Callable[[str], None]) -> None:
        self._watchers.remove(callback)

    def may_be_ready(self, domain: str) -> None:
        for callback in self._watchers:
            callback(domain)

    def state(self, domain: str) -> DomainState:
        state = self.states.get(domain)
        if state is None:
            state = self.states[domain] = DomainState()
            self.controls.for_domain(domain).apply(state)
            if (learned := self.evicted_learning.pop(domain, None)) is not None:
                state.learned_delay, state.floor = learned
        return state

    def evict_idle(self, now: float, idle_seconds: float, keep: Container[str] = ()) -> list[str]:
        """Forget the state of the domains not in ``keep`` that nothing happened to for
        ``idle_seconds`` (nothing in flight, no block, no open circuit, no slot since), so that
        memory follows the domains being crawled, not every domain ever seen; what they learned
        stays, as two numbers. The domains evicted."""
        evicted = []
        for domain, state in self.states.items():
            if domain in keep or state.inflight:
                continue
            last = max(state.last_start or 0.0, state.next_start, state.blocked_until, state.circuit_open_until or 0.0)
            if now - last >= idle_seconds:
                evicted.append(domain)
        for domain in evicted:
            state = self.states.pop(domain)
            if state.learned_delay or state.floor:
                self.evicted_learning[domain] = (state.learned_delay, state.floor)
        return evicted

    def ready_at(self, domain: str) -> float:
        return self.policy.ready_at(self.state(domain))

    def departure_at(self, domain: str) -> float:
        return self.policy.departure_at(self.state(domain))

    def can_start(self, domain: str, now: float | None = None) -> bool:
        return self.policy.can_start(self.state(domain), self.clock() if now is None else now)

    def try_start(self, domain: str, holder: str = "") -> Any:
        """Reserve the domain's next slot now for ``holder`` if the domain is ready: the
        reservation (which only ``unreserve`` reads), or None."""
        now = self.clock()
        return self.policy.start(self.state(domain), now) if self.can_start(domain, now) else None

    def sent(self, domain: str) -> float:
        """A request of the domain left for the network now (the download handler saw its bytes
        leave, ``crawler.download.handler``); returns the delay in force."""
        state = self.state(domain)
        self.policy.sent(state, self.clock())
        self.may_be_ready(domain)  # its next slot is known now
        return self.policy.effective_delay(state)

    def unreserve(self, domain: str, reservation: Any) -> None:
        self.policy.unreserve(self.state(domain), reservation)
        self.may_be_ready(domain)

    def finish(self, domain: str, holder: str = "") -> None:
        self.policy.finish(self.state(domain))
        self.may_be_ready(domain)

    def success(self, domain: str, latency: float | None = None, sent_at: float | None = None) -> Outcome:
        outcome = self.policy.on_success(self.state(domain), self.clock(), latency, sent_at)
        self.may_be_ready(domain)  # a block cleared
        return outcome

    def failure(self, domain: str) -> bool:
        """Record a failure; True when it opens the domain's circuit."""
        return self.policy.on_failure(self.state(domain), self.clock())

    def blocked(self, domain: str, retry_after: float | None = None, sent_at: float | None = None) -> Outcome:
        return self.policy.on_blocked(self.state(domain), self.clock(), retry_after, sent_at)

    def set_robots_delay(self, domain: str, delay: float | None) -> None:
        self.policy.set_robots_delay(self.state(domain), delay, self.clock())
        self.may_be_ready(domain)

    def learned(self, domain: str, delay: float, floor: float) -> None:
        """Seed a domain with what earlier crawls learned."""
        state = self.state(domain)
        state.learned_delay, state.floor = delay, floor

    async def set_controls(self, controls: ControlTable) -> None:
        """Apply new domain controls to every domain (and to each new one)."""
        self.controls = controls
        for domain, state in self.states.items():
            if controls.for_domain(domain).apply(state):
                self.may_be_ready(domain)

    async def reset(self, domain: str) -> DomainState:
        """Forget what the domain taught (an operator's reset); its state after."""
        state = self.state(domain)
        self.policy.reset(state)
        self.may_be_ready(domain)
        return state

    def effective_delay(self, domain: str) -> float:
        return self.policy.effective_delay(self.state(domain))

    def concurrency(self, domain: str) -> int:
        return self.policy.concurrency(self.state(domain))

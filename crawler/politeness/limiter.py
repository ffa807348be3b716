"""The domain limiter: the policy applied to per-domain state kept in this process.

One instance per crawler (``limiter_for``), shared by the frontier queue (which starts
requests only on ready domains), the limiter middleware (which records outcomes) and the
robots middleware (which sets robots delays). The clock is injectable; it is Unix time so that
times stored in request meta (``not_before``) mean the same thing everywhere.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from weakref import WeakKeyDictionary

from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings

from crawler.politeness.policy import DomainState, Outcome, Policy, PolicyConfig


class DomainLimiter:
    def __init__(self, policy: Policy, clock: Callable[[], float] = time.time):
        self.policy = policy
        self.clock = clock
        self.states: dict[str, DomainState] = {}
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
        return state

    def ready_at(self, domain: str) -> float:
        return self.policy.ready_at(self.state(domain))

    def can_start(self, domain: str, now: float | None = None) -> bool:
        return self.policy.can_start(self.state(domain), self.clock() if now is None else now)

    def try_start(self, domain: str, holder: str = "") -> Any:
        """Reserve the domain's next slot now for ``holder`` if the domain is ready: the
        reservation (which only ``unreserve`` reads), or None."""
        now = self.clock()
        return self.policy.start(self.state(domain), now) if self.can_start(domain, now) else None

    def sent(self, domain: str) -> None:
        self.policy.sent(self.state(domain), self.clock())

    def unreserve(self, domain: str, reservation: Any) -> None:
        self.policy.unreserve(self.state(domain), reservation)
        self.may_be_ready(domain)

    def finish(self, domain: str, holder: str = "") -> None:
        self.policy.finish(self.state(domain))
        self.may_be_ready(domain)

    def success(self, domain: str, latency: float | None = None) -> Outcome:
        outcome = self.policy.on_success(self.state(domain), self.clock(), latency)
        self.may_be_ready(domain)  # a block cleared
        return outcome

    def failure(self, domain: str) -> bool:
        """Record a failure; True when it opens the domain's circuit."""
        return self.policy.on_failure(self.state(domain), self.clock())

    def blocked(self, domain: str, retry_after: float | None = None) -> Outcome:
        return self.policy.on_blocked(self.state(domain), self.clock(), retry_after)

    def set_robots_delay(self, domain: str, delay: float | None) -> None:
        self.policy.set_robots_delay(self.state(domain), delay, self.clock())
        self.may_be_ready(domain)

    def learned(self, domain: str, delay: float, floor: float) -> None:
        """Seed a domain with what earlier crawls learned."""
        state = self.state(domain)
        state.learned_delay, state.floor = delay, floor

    def effective_delay(self, domain: str) -> float:
        return self.policy.effective_delay(self.state(domain))

    def concurrency(self, domain: str) -> int:
        return self.policy.concurrency(self.state(domain))


def policy_config(settings: BaseSettings) -> PolicyConfig:
    if not settings.getbool("CRAWLER_LIMITER_ENABLED"):
        # No pacing at all: no delay, no per-domain limit beyond Scrapy's own.
        return PolicyConfig(default_delay=0, base_concurrency=1_000_000, latency_factor=0, circuit_failures=1_000_000)
    return PolicyConfig(
        default_delay=settings.getfloat("CRAWLER_DEFAULT_DELAY"),
        min_delay=settings.getfloat("CRAWLER_MIN_DELAY"),
        robots_delay_cap=settings.getfloat("CRAWLER_ROBOTS_DELAY_CAP"),
        max_delay=settings.getfloat("CRAWLER_MAX_DELAY"),
        base_concurrency=settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN"),
        concurrency_step=settings.getfloat("CRAWLER_CONCURRENCY_STEP"),
        probe_after=settings.getint("CRAWLER_PROBE_AFTER"),
        block_cap=settings.getfloat("CRAWLER_BLOCK_CAP"),
        circuit_failures=settings.getint("CRAWLER_CIRCUIT_FAILURES"),
        circuit_open_seconds=settings.getfloat("CRAWLER_CIRCUIT_OPEN_SECONDS"),
        circuit_close_successes=settings.getint("CRAWLER_CIRCUIT_CLOSE_SUCCESSES"),
        latency_factor=settings.getfloat("CRAWLER_LATENCY_FACTOR"),
    )


_limiters: WeakKeyDictionary[Crawler, DomainLimiter] = WeakKeyDictionary()


def limiter_for(crawler: Crawler) -> DomainLimiter:
    """The crawler's one limiter, created on first use."""
    limiter = _limiters.get(crawler)
    if limiter is None:
        policy = Policy(policy_config(crawler.settings))
        # Imported here: the shared limiter builds on this module.
        from crawler.shared.connection import shared_services
        from crawler.shared.limiter import SharedDomainLimiter

        services = shared_services(crawler)
        limiter = _limiters[crawler] = (
            DomainLimiter(policy) if services is None else SharedDomainLimiter(policy, services.frontier, services.link)
        )
    return limiter

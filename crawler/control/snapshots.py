"""``domain_state`` rows: the pacing of each domain that changed since the last snapshot, with
what this process counted for it meanwhile (the table adds the counts up across processes)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from scrapy.crawler import Crawler

from crawler.control.activity import DomainActivity, DomainCounts
from crawler.frontier.queue import PolitePriorityQueue
from crawler.politeness.limiter import DomainLimiter
from crawler.politeness.policy import DomainState, Policy
from crawler.shared.limiter import SharedDomainLimiter
from crawler.shared.link import REDIS_ERRORS


def domain_state_row(
    domain: str, state: DomainState, policy: Policy, now: float, in_flight: int, queued: int, counts: DomainCounts
) -> tuple[Any, ...]:
    """In ``DOMAIN_STATE_COLUMNS`` order; ``now`` is Unix time."""
    blocked_until = datetime.fromtimestamp(state.blocked_until, UTC) if state.blocked_until > now else None
    return (
        domain, policy.effective_delay(state), state.robots_delay, state.learned_delay, state.floor, blocked_until,
        policy.circuit(state, now), in_flight, queued, counts.pages, counts.errors, counts.responses_429,
        datetime.fromtimestamp(now, UTC),
    )  # fmt: skip


class DomainSnapshots:
    def __init__(self, crawler: Crawler, limiter: DomainLimiter, activity: DomainActivity):
        self.crawler = crawler
        self.limiter = limiter
        self.activity = activity

    async def rows(self) -> list[tuple[Any, ...]]:
        """Rows of the domains changed since the last call; Redis is read on its own thread."""
        changed = self.activity.take()
        limiter = self.limiter
        loads = await limiter.link.run(lambda _: self._shared_loads(changed)) if isinstance(limiter, SharedDomainLimiter) else {}
        return self._rows(changed, loads)

    def rows_now(self) -> list[tuple[Any, ...]]:
        """The same, at once (the spider is closing)."""
        changed = self.activity.take()
        return self._rows(changed, self._shared_loads(changed))

    def _rows(self, changed: dict[str, DomainCounts], loads: dict[str, tuple[int, int]]) -> list[tuple[Any, ...]]:
        limiter = self.limiter
        rows = []
        for domain, counts in changed.items():
            state = limiter.state(domain)
            in_flight, queued = loads.get(domain) or (state.inflight, self._local_queued(domain))
            rows.append(domain_state_row(domain, state, limiter.policy, limiter.clock(), in_flight, queued, counts))
        return rows

    def _shared_loads(self, changed: dict[str, DomainCounts]) -> dict[str, tuple[int, int]]:
        """In a shared crawl, the requests in flight and queued of each domain, in the whole crawl."""
        limiter = self.limiter
        if not isinstance(limiter, SharedDomainLimiter) or not limiter.link.available:
            return {}  # Redis away: the link says so in the log
        try:
            return {domain: limiter.frontier.domain_load(domain) for domain in changed}
        except REDIS_ERRORS:
            return {}

    def _local_queued(self, domain: str) -> int:
        engine = self.crawler.engine
        queue = getattr(engine.scheduler, "mqs", None) if engine is not None else None
        return queue.queued(domain) if isinstance(queue, PolitePriorityQueue) else 0

"""``domain_state`` rows: the pacing of each domain that changed since the last snapshot, with
what this process counted for it meanwhile (the table adds the counts up across processes)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from crawler.control.activity import DomainCounts
from crawler.politeness.limiter_local import DomainLimiter
from crawler.politeness.policy import DomainState, Policy


def domain_state_row(
    domain: str, state: DomainState, policy: Policy, now: float, in_flight: int, queued: int, counts: DomainCounts
) -> tuple[Any, ...]:
    """In ``DOMAIN_STATE_COLUMNS`` order; ``now`` is Unix time."""
    blocked_until = datetime.fromtimestamp(state.blocked_until, UTC) if state.blocked_until > now else None
    return (
        domain,
        policy.effective_delay(state),
        state.robots_delay,
        state.learned_delay,
        state.floor,
        blocked_until,
        policy.circuit(state, now),
        in_flight,
        queued,
        counts.pages,
        counts.errors,
        counts.responses_429,
        datetime.fromtimestamp(now, UTC),
    )


def domain_state_rows(
    changed: Mapping[str, DomainCounts], loads: Mapping[str, tuple[int, int]], limiter: DomainLimiter
) -> list[tuple[Any, ...]]:
    """Rows of the ``changed`` domains, with their requests in flight and queued (``loads``)."""
    now = limiter.clock()
    return [
        domain_state_row(domain, limiter.state(domain), limiter.policy, now, *loads[domain], counts)
        for domain, counts in changed.items()
    ]

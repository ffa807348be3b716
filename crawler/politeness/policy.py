"""The adaptive domain policy: pure arithmetic on a domain's state, no I/O, no clock of its own.

Every method takes ``now`` (seconds, monotonic or wall, as long as it is one clock). The rules
are DESIGN.md's table: effective delay, concurrency reduced as the learned delay grows, 429
blocks with Retry-After or Fibonacci backoff, probing down after a run of successes with a
recorded floor, a latency factor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

_SAME_TIME = 1e-3
"""Slot times within this are one: the shared frontier keeps them to the microsecond, as text."""


@dataclass(frozen=True, slots=True)
class PolicyConfig:
    default_delay: float = 1.0
    """Delay when robots.txt gives none."""
    min_delay: float = 0.0
    """The user's minimum delay; nothing goes below it."""
    robots_delay_cap: float = 60.0
    max_delay: float = 60.0
    """Cap of the learned delay."""
    base_concurrency: int = 2
    concurrency_step: float = 5.0
    """Concurrency drops by one for every this many seconds the learned delay sits above baseline."""
    probe_after: int = 20
    """Consecutive successes before probing one step down."""
    block_cap: float = 600.0
    """Cap of a block, whether from Retry-After or from backoff."""
    step: float = 1.0
    """The learning step where delays are at least this long."""
    step_fraction: float = 0.25
    """Below ``step``, the step is this fraction of the delay, so fast sites are not slowed to
    one request a second."""
    probe_fraction: float = 0.05
    """Below two steps, a probe lowers the delay by this fraction of it."""
    min_step: float = 0.05
    circuit_failures: int = 5
    """Consecutive failures (connection errors, timeouts, 5xx) that open a domain's circuit."""
    circuit_open_seconds: float = 60.0
    circuit_close_successes: int = 2
    """Successes of half-open probes that close the circuit again."""
    latency_factor: float = 1.0
    """The delay is at least this many times the recent response time (0 turns it off)."""
    latency_smoothing: float = 0.3
    send_timeout: float = 30.0
    """How long a reserved slot may wait for its request to leave before the domain stops
    waiting for it (a request that never reaches the network nor comes back)."""
    handout_lead: float = 0.0
    """How long before its slot a domain's next request may be handed out. It then waits at the
    download handler until its time (``departure_at``): its way through the engine and the
    middlewares, tens of milliseconds on a busy reactor, is no longer added to every delay."""


@dataclass(slots=True)
class DomainState:
    robots_delay: float | None = None
    learned_delay: float = 0.0
    floor: float = 0.0
    blocked_until: float = 0.0
    blocked_at: float = 0.0
    """When the last blocking answer was read: only a request that left after it can say the
    block is over."""
    blocking_streak: int = 0
    """Consecutive blocking answers (429, and 403/503 as blocking signals)."""
    success_streak: int = 0
    probe_from: float | None = None
    """The learned delay before the last probe, while that probe is unconfirmed."""
    next_start: float = 0.0
    previous_next_start: float = 0.0
    last_start: float | None = None
    last_sent: float | None = None
    """When the domain's last request left (``sent``): the next may leave the delay after."""
    unsent_until: float = 0.0
    """While the request of the last slot has not left yet (the domain waits for it), until
    when at most; 0 when nothing is pending."""
    inflight: int = 0
    latency: float | None = None
    failure_streak: int = 0
    circuit_open_until: float | None = None
    """Set while the circuit is open or half-open (after this time, one probe at a time)."""
    probe_successes: int = 0
    override_delay: float | None = None
    """A per-domain minimum delay (``CRAWLER_DOMAIN_OVERRIDES`` or an operator's), in place of
    the default and minimum delays; robots.txt and learned delays still win when longer."""
    override_concurrency: int | None = None
    """A per-domain concurrency in place of the base one; learning still lowers it."""
    paused: bool = False
    """An operator paused the domain: nothing starts; what is in flight finishes."""


class Change(Enum):
    NONE = "none"
    INCREASED = "increased"
    PROBED = "probed"
    REVERTED = "reverted"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an event did to the domain's pacing."""

    change: Change = Change.NONE
    block: float = 0.0
    """Seconds a blocking answer blocks the domain from now, its own block (a longer one may
    stand); of a refusal again, how long it holds the block from now where it ends later, else 0."""
    delay_before: float = 0.0
    delay_after: float = 0.0
    concurrency_before: int = 0
    concurrency_after: int = 0
    again: bool = False
    """A refusal of a request that left before the last blocking answer was read: that refusal
    again, which blocks longer only where its own Retry-After ends later."""

    @property
    def pacing_changed(self) -> bool:
        return (
            self.change is not Change.NONE
            or self.block > 0
            or self.delay_before != self.delay_after
            or self.concurrency_before != self.concurrency_after
        )


def fibonacci(n: int) -> int:
    """1, 1, 2, 3, 5, 8 … for n = 1, 2, 3 …"""
    a, b = 1, 1
    for _ in range(max(n, 1) - 1):
        a, b = b, a + b
    return a


@dataclass(slots=True)
class Policy:
    config: PolicyConfig = field(default_factory=PolicyConfig)

    # --- delays ----------------------------------------------------------------------------
    def baseline(self, state: DomainState) -> float:
        """The delay before any learning: robots.txt's (capped) or the default, and the minimum."""
        robots = state.robots_delay
        override = state.override_delay
        default = self.config.default_delay if override is None else override
        base = min(robots, self.config.robots_delay_cap) if robots is not None else default
        return max(base, self.config.min_delay if override is None else override)

    def effective_delay(self, state: DomainState) -> float:
        latency = self.config.latency_factor * (state.latency or 0.0)
        return max(self.baseline(state), state.learned_delay, latency)

    def concurrency(self, state: DomainState) -> int:
        above = state.learned_delay - self.baseline(state)
        reduction = int(above // self.config.concurrency_step) if above > 0 else 0
        base = self.config.base_concurrency if state.override_concurrency is None else state.override_concurrency
        return max(1, base - reduction)

    def step_up(self, delay: float) -> float:
        """One second where delays are seconds long, a fraction of the delay below that."""
        if delay >= self.config.step:
            return self.config.step
        return max(self.config.min_step, delay * self.config.step_fraction)

    def step_down(self, delay: float) -> float:
        """One second where delays stay seconds long; below that a small fraction of the delay:
        increases are coarse so that a site is found quickly, probes fine so that the learned
        delay settles close to what the site allows."""
        if delay - self.config.step >= self.config.step:
            return self.config.step
        return delay * self.config.probe_fraction

    # --- scheduling ------------------------------------------------------------------------
    def ready_at(self, state: DomainState) -> float:
        """When the domain may be handed its next request, concurrency allowing: the lead
        before its slot, never while it is blocked or its last request has not left."""
        slot = state.next_start - self.config.handout_lead
        return max(state.blocked_until, slot, state.circuit_open_until or 0.0, state.unsent_until)

    def departure_at(self, state: DomainState) -> float:
        """When a request handed out may leave: the delay in force after the last departure
        (known only once that request left, so an early hand-out never shortens the spacing),
        and not while the domain is blocked."""
        after_last = 0.0 if state.last_sent is None else state.last_sent + self.effective_delay(state)
        return max(state.blocked_until, after_last)

    def can_start(self, state: DomainState, now: float) -> bool:
        if state.paused:
            return False
        if now < state.unsent_until:
            return False  # the next slot counts from when the last request leaves: not known yet
        if state.circuit_open_until is not None:
            # Open: nothing until the time comes; then half-open: one probe at a time.
            return now >= max(self.ready_at(state), state.circuit_open_until) and state.inflight == 0
        return now >= self.ready_at(state) and state.inflight < self.concurrency(state)

    def start(self, state: DomainState, now: float) -> float:
        """Reserve the domain's next slot (now, or at its time when handed out ahead of it) for
        a request; returns the reservation."""
        slot = max(now, state.next_start)
        state.previous_next_start = state.next_start
        state.next_start = slot + self.effective_delay(state)
        state.last_start = slot
        state.inflight += 1
        delay = self.effective_delay(state)
        if delay > 0:
            state.unsent_until = now + self.config.send_timeout
        return state.next_start

    def sent(self, state: DomainState, now: float) -> None:
        """A request of the domain leaves now (its bytes were written to the socket): the next
        slot counts from now, so that time spent between the frontier and the network (a busy
        reactor, a new connection) never shortens the spacing the site sees."""
        state.next_start = max(state.next_start, now + self.effective_delay(state))
        state.last_start = state.last_sent = now
        state.unsent_until = 0.0

    def unreserve(self, state: DomainState, reservation: float) -> None:
        """Give back a slot whose request was dropped before it was sent, unless another
        request has reserved the next slot since."""
        if state.next_start == reservation:
            state.next_start = state.previous_next_start
        state.unsent_until = 0.0

    def finish(self, state: DomainState) -> None:
        state.inflight = max(0, state.inflight - 1)

    def set_robots_delay(self, state: DomainState, delay: float | None, now: float) -> None:
        """A new robots.txt delay applies from the moment the rules arrive (``now``), when the
        domain has started anything: the fetch of robots.txt itself is spaced from the page
        that follows it, however late the server saw that fetch (a first connection can reach
        it tens of milliseconds after the request left the crawler). A shorter delay replaces
        the one the last start was spaced by (robots.txt's own fetch, at the default delay),
        unless a later slot was reserved meanwhile."""
        spaced_by = self.effective_delay(state)
        state.robots_delay = delay
        if state.last_start is None:
            return
        after_rules = max(now, state.last_start) + self.effective_delay(state)
        if state.next_start <= state.last_start + spaced_by + _SAME_TIME:
            state.next_start = after_rules
        else:
            state.next_start = max(state.next_start, after_rules)

    # --- outcomes --------------------------------------------------------------------------
    def on_success(
        self, state: DomainState, now: float, latency: float | None = None, sent_at: float | None = None
    ) -> Outcome:
        """An answer. It clears the block and its streak if its request left (``sent_at``) after
        the last blocking answer was read: a request already on its way then, answered after,
        says nothing of the site since, and Retry-After still holds. Of a request whose
        departure is unknown, only once the block is over."""
        before = self._snapshot(state)
        after_block = state.blocked_at <= sent_at if sent_at is not None else state.blocked_until <= now
        if after_block:
            state.blocked_until = 0.0
            state.blocking_streak = 0
        state.failure_streak = 0
        if state.circuit_open_until is not None:
            state.probe_successes += 1
            if state.probe_successes >= self.config.circuit_close_successes:
                state.circuit_open_until, state.probe_successes = None, 0
        if latency is not None:
            alpha = self.config.latency_smoothing
            state.latency = latency if state.latency is None else alpha * latency + (1 - alpha) * state.latency
        state.success_streak += 1
        change = Change.NONE
        if state.success_streak >= self.config.probe_after:
            state.success_streak = 0
            state.probe_from = None  # the last probe held for a whole run of successes
            lowest = max(state.floor, self.baseline(state))
            if state.learned_delay > lowest:
                state.probe_from = state.learned_delay
                state.learned_delay = max(lowest, state.learned_delay - self.step_down(state.learned_delay))
                change = Change.PROBED
        return self._outcome(state, before, change)

    def on_blocked(
        self, state: DomainState, now: float, retry_after: float | None = None, sent_at: float | None = None
    ) -> Outcome:
        """A 429 (or 403/503 as a blocking signal): block the domain and learn. Of a request
        that left (``sent_at``) before the last blocking answer was read, it is that refusal
        again, answered to a request already on its way: no new block, and the streak, its
        backoff and the delay are not raised twice for one refusal; a Retry-After of its own
        that ends later holds the block until it is out (and, read now, only a request that
        leaves after it lifts the block)."""
        before = self._snapshot(state)
        if sent_at is not None and sent_at < state.blocked_at:
            until = now + self._block_seconds(state, retry_after) if retry_after is not None else 0.0
            block = 0.0
            if until > state.blocked_until:
                state.blocked_until, state.blocked_at = until, now
                block = until - now
            return self._outcome(state, before, Change.NONE, block, again=True)
        state.blocking_streak += 1
        state.success_streak = 0
        if state.probe_from is not None:
            state.learned_delay = state.probe_from
            state.floor = max(state.floor, state.probe_from)
            state.probe_from = None
            change = Change.REVERTED
        else:
            current = max(state.learned_delay, self.baseline(state))
            if state.floor and current <= state.floor:
                # Refused at the floor, a delay that held for a whole run of successes: the
                # limit lies just above it, so a fine step, and the floor rises with it.
                state.learned_delay = state.floor = min(self.config.max_delay, current + self.step_down(current))
            else:
                state.learned_delay = min(self.config.max_delay, current + self.step_up(current))
            change = Change.INCREASED
        block = self._block_seconds(state, retry_after)
        state.blocked_until = max(state.blocked_until, now + block)
        state.blocked_at = now
        return self._outcome(state, before, change, block)

    def _block_seconds(self, state: DomainState, retry_after: float | None) -> float:
        """How long a blocking answer blocks: its Retry-After, else the streak's backoff, within the cap."""
        wait = retry_after if retry_after is not None else float(fibonacci(state.blocking_streak))
        return min(max(wait, 0.0), self.config.block_cap)

    def on_failure(self, state: DomainState, now: float) -> bool:
        """A connection failure, timeout or 5xx; True when it opens the circuit."""
        state.failure_streak += 1
        half_open = state.circuit_open_until is not None
        if half_open or state.failure_streak >= self.config.circuit_failures:
            state.circuit_open_until = now + self.config.circuit_open_seconds
            state.probe_successes = 0
            return True
        return False

    def circuit(self, state: DomainState, now: float) -> str:
        """``closed``, ``open`` (nothing until its time) or ``half_open`` (one probe at a time)."""
        if state.circuit_open_until is None:
            return "closed"
        return "open" if now < state.circuit_open_until else "half_open"

    def reset(self, state: DomainState) -> None:
        """Forget what the domain taught: learned delay and floor, block, circuit, streaks
        (an operator's reset, for a site that has been fixed)."""
        state.learned_delay = state.floor = state.blocked_until = 0.0
        state.blocking_streak = state.success_streak = state.failure_streak = state.probe_successes = 0
        state.probe_from = state.circuit_open_until = None

    def _snapshot(self, state: DomainState) -> tuple[float, int]:
        return self.effective_delay(state), self.concurrency(state)

    def _outcome(
        self, state: DomainState, before: tuple[float, int], change: Change, block: float = 0.0, *, again: bool = False
    ) -> Outcome:
        return Outcome(
            change, block, before[0], self.effective_delay(state), before[1], self.concurrency(state), again=again
        )

"""The domain limiter with its state in Redis, shared by every process of the crawl.

The policy stays the pure one of ``crawler.politeness.policy``; the state is the crawl store's
(``crawler.redis.store``), whose script also keeps the queues, so that a slot is reserved in the
step that hands a request out. Slots (reserve, sent, give back,
finish) are single script calls; outcomes (success, 429, failure, robots delay) read the
domain's state, apply the policy and write it back in one optimistic transaction, tried again
(a few times) if any process changed the domain meanwhile. What the frontier script needs of
the policy's verdict is written beside the state: the effective delay, the concurrency and the
time until which the domain is held (a 429 block or an open circuit), so a 429 seen by one
process stops every process at its next pop.

Nothing here waits for Redis: every call is queued on the crawl's link (``RedisLink``) and
answered from this process's copy of each domain's state (``states``), which every transaction
brings up to date (but an answer sent before a later change of the copy, which it would undo),
and which the shared frontier reads before the first request of a domain
leaves from this process (``load_unread``): of a domain another process started, the copy would
otherwise be the default state, without the delay robots.txt set there, and the request would be
held and recorded by a delay that did not space it. A slot for a request this process keeps
(``try_start``) is asked for and granted later: the domain is then said to be ready
(``may_be_ready``) and the next ``try_start`` takes the grant; one not taken within
``GRANT_FRESH_SECONDS`` (its taker stopped asking: an open circuit, a block came meanwhile) is
given back and asked for again, as the frontier's hold of that slot ends.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Container, Iterable
from dataclasses import asdict, dataclass, replace
from typing import Any, TypeVar

import redis

from crawler.politeness.limiter_local import DomainLimiter
from crawler.politeness.overrides import ControlTable
from crawler.politeness.policy import DomainState, Outcome, Policy
from crawler.politeness.slots import stale_after
from crawler.redis.keys import as_text
from crawler.redis.link import REDIS_ERRORS, Op, RedisLink
from crawler.redis.scripts import server_time
from crawler.redis.store import FrontierStore

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Fields of their own, not part of the JSON state: the slot times, which the frontier script
# writes, and what a worker of an earlier release would not know (its ``DomainState`` refuses
# an unknown name in the JSON), so that the workers of a crawl can be upgraded one by one.
_APART_FIELDS = ("next", "prev", "last", "blocked_at")
_APART_ATTRIBUTES = ("next_start", "previous_next_start", "last_start", "blocked_at")
# The frontier script holds a paced domain's slot until its request left (``pending``): the
# policy's own wait for that (``unsent_until``) and its departure time (``last_sent``, for the
# hand-out ahead of a slot) are for the limiter of one process.
_TRANSIENT = frozenset({*_APART_ATTRIBUTES, "inflight", "unsent_until", "last_sent"})
# A paused domain is held until an operator resumes it; a finite time, as the frontier script
# compares numbers (year 33658).
_PAUSED_HOLD = 1e12

WATCH_ATTEMPTS = 5
"""Tries of one optimistic transaction before the outcome is left unrecorded (and counted)."""

Change = Callable[[DomainState, float], T]
"""What an outcome does to a domain's state, at a time."""


GRANT_FRESH_SECONDS = stale_after(0.0)
"""How long a slot granted stays this process's to take: the frontier holds a slot for
``SEND_WINDOW`` at least (the domain's delay when longer), and the grant is no older than the ask."""


@dataclass(frozen=True, slots=True)
class _Grant:
    holder: str
    reservation: str
    asked_at: float
    """When it was asked for (``_timer``): the slot is no older."""
    keeps_share: bool
    """A ``reslot``'s: its share of the concurrency is its leased request's, not the grant's."""


class RedisDomainLimiter(DomainLimiter):
    shared = True

    def __init__(self, policy: Policy, store: FrontierStore, link: RedisLink | None = None):
        super().__init__(policy, store.clock or time.time)
        self.store = store
        self._timer = store.clock or time.monotonic
        """Measures time passed: a clock that never jumps (a test's own when it has one)."""
        self.link = link or RedisLink(store.client)
        self._grants: dict[str, _Grant] = {}
        """Slots granted to this process and not taken yet, by domain."""
        self._asking: dict[str, float] = {}
        """Domains whose slot this process asked for, and when (``_timer``)."""
        self._read: set[str] = set()
        """Domains whose shared state this process has read (an answer of Redis): until then its
        copy of a domain is the default state, which knows no robots.txt delay."""
        self._changes = 0
        """How many changes this process has made to its copies and sent on to Redis."""
        self._latest_change: dict[str, int] = {}
        """Domains with a change of this process's on its way to Redis: the number of the latest.
        An answer sent before it does not know it, and would undo it in the copy (a block
        undone while a success's transaction comes back lets a request leave meanwhile)."""

    def _op(self, operation: str, *args: Any, done: Callable[[Any], None] | None = None) -> None:
        store = self.store
        self.link.submit(Op(send=lambda pipe: store.call(operation, *args, client=pipe), done=done))

    # --- state -------------------------------------------------------------------------------
    def refresh(self, domain: str, done: Callable[[], None] | None = None) -> None:
        """Bring this process's copy of the domain's state up to date (soon), then call ``done``."""
        key = self.store.domain_key(domain)
        knows = self._changes

        def keep(fields: Any) -> None:
            self._keep(domain, fields and _decode(fields), knows)
            if done is not None:
                done()

        self.link.submit(Op(send=lambda pipe: pipe.hmget(key, "state", *_APART_FIELDS), done=keep))

    def load_unread(self, domains: Iterable[str], done: Callable[[], None]) -> None:
        """Read the shared state of those of ``domains`` this process has not read yet, then call
        ``done``; before their requests leave from this process, whose departures are held and
        recorded by the delay of this copy."""
        unread = [domain for domain in domains if domain not in self._read]
        if not unread:
            done()
            return
        for domain in unread[:-1]:
            self.refresh(domain)
        self.refresh(unread[-1], done)  # the link answers in order: this answer comes last

    def _changed(self, domain: str) -> int:
        """Number a change of the domain's copy that is sent on to Redis."""
        self._changes += 1
        self._latest_change[domain] = self._changes
        return self._changes

    def _answered(self, domain: str, knows: int) -> bool:
        """An answer of Redis came that knows this process's changes up to number ``knows``:
        whether it knows every change made to the domain's copy (none is on its way then)."""
        latest = self._latest_change.get(domain)
        if latest is None:
            return True
        if latest > knows:
            return False
        del self._latest_change[domain]
        return True

    def _keep(self, domain: str, state: DomainState | None, knows: int) -> None:
        answered = self._answered(domain, knows)
        if state is None:
            return
        if answered:
            state.inflight = self.state(domain).inflight  # this process's own, not shared
            self.states[domain] = state
            self._read.add(domain)
        else:
            _keep_stricter(self.state(domain), state)

    def evict_idle(self, now: float, idle_seconds: float, keep: Container[str] = ()) -> list[str]:
        evicted = super().evict_idle(now, idle_seconds, keep)
        self._read.difference_update(evicted)  # read again if they come back
        return evicted

    def _apply(self, domain: str, change: Change[T]) -> T:
        """Apply ``change`` to this process's copy now (the answer), and to the shared state
        in Redis by a transaction at the server's time."""
        result = change(self.state(domain), self.clock())
        knows = self._changed(domain)
        self.link.submit(
            Op(
                run=lambda client: self._transaction(client, domain, change),
                done=lambda state: self._keep(domain, state, knows),
            )
        )
        return result

    def _transaction(self, client: redis.Redis, domain: str, change: Change[Any]) -> DomainState | None:
        key = self.store.domain_key(domain)
        with client.pipeline(transaction=True) as pipe:
            for _ in range(WATCH_ATTEMPTS):
                try:
                    pipe.watch(key)
                    # the clock of the domain's node, which the frontier script reads too
                    now = self.store.now() if self.store.clock is not None else server_time(pipe, key)
                    state = _decode(pipe.hmget(key, "state", *_APART_FIELDS))
                    self.controls.for_domain(domain).apply(state)  # every process obeys the latest it knows
                    change(state, now)
                    pipe.multi()
                    self.store.update(domain, self._fields(state), client=pipe)
                    pipe.execute()
                    return state
                except redis.WatchError:
                    continue  # another process changed the domain: apply to its new state
        logger.warning(
            "Pacing of %s not updated: other processes changed it %d times meanwhile", domain, WATCH_ATTEMPTS
        )
        return None

    def _fields(self, state: DomainState) -> dict[str, Any]:
        policy = self.policy
        learned = {k: v for k, v in asdict(state).items() if k not in _TRANSIENT}
        return {
            "state": json.dumps(learned, separators=(",", ":")),
            "next": f"{state.next_start:.6f}",
            "blocked_at": repr(state.blocked_at),
            "delay": repr(policy.effective_delay(state)),
            "limit": 1 if state.circuit_open_until is not None else policy.concurrency(state),
            "hold": repr(_PAUSED_HOLD if state.paused else max(state.blocked_until, state.circuit_open_until or 0.0)),
        }

    # --- slots -------------------------------------------------------------------------------
    def can_start(self, domain: str, now: float | None = None) -> bool:
        """From this process's copy (its own slots in flight, the state of its last
        transaction): the frontier script decides (``try_start``)."""
        state = self.state(domain)
        if self._fresh_grant(domain):
            # Granted and not taken yet: counted in flight, and the very slot to take.
            state = replace(state, inflight=state.inflight - 1)
        return self.policy.can_start(state, self.clock() if now is None else now)

    def try_start(self, domain: str, holder: str = "", *, stale: bool = False) -> str | None:
        """``stale``: ``holder`` is a handed-out request whose slot went stale before it left;
        it keeps its share of the domain's concurrency while its lease does."""
        if not self._fresh_grant(domain) and domain not in self._asking:
            self._asking[domain] = self._timer()
            arguments = self.store.try_reserve_arguments(domain, holder, stale=stale)
            self._op(*arguments, done=lambda answer: self._granted(domain, holder, stale, answer))
        grant = self._grants.pop(domain, None)  # there at once when the link is not started
        if grant is None:
            return None
        if grant.holder != holder:
            self._op("rehold", domain, grant.holder, holder)
        return grant.reservation

    def _granted(self, domain: str, holder: str, keeps_share: bool, answer: Any) -> None:
        asked_at = self._asking.pop(domain, self._timer())
        if answer:
            self._grants[domain] = _Grant(holder, as_text(answer), asked_at, keeps_share)
            self.state(domain).inflight += 1
            self.may_be_ready(domain)

    def _fresh_grant(self, domain: str) -> bool:
        """Whether a slot granted to this process waits to be taken. One granted while its taker
        stopped asking (an open circuit, a block came meanwhile) and not taken within
        ``GRANT_FRESH_SECONDS`` is given back: the frontier's hold of it ends, and another process
        may take the next slot."""
        grant = self._grants.get(domain)
        if grant is None:
            return False
        if self._timer() - grant.asked_at < GRANT_FRESH_SECONDS:
            return True
        del self._grants[domain]
        self.policy.finish(self.state(domain))  # its count in flight
        self._op("give_back", domain, grant.reservation, "" if grant.keeps_share else grant.holder)
        self.may_be_ready(domain)
        return False

    def sent(self, domain: str) -> float:
        """The request of the domain's slot left now (the download handler saw its bytes leave);
        returns the delay in force, as this process knows it."""
        delay = super().sent(domain)
        timer, store = self._timer, self.store
        left = timer()
        knows = self._changed(domain)

        def send(pipe: Any) -> Any:
            # Stamped with the server's time when it runs, less the time this process knows
            # passed since the request left (until the script is sent, before it runs): never
            # earlier than the departure, and not later by the way to Redis either.
            return store.call("sent", domain, repr(timer() - left), client=pipe)

        def done(_: Any) -> None:
            self._answered(domain, knows)  # the copy made the same change
            # The domain's slot was held until now: its next request may be popped once the delay passes.
            self.may_be_ready(domain)

        self.link.submit(Op(send=send, done=done))
        return delay

    def unreserve(self, domain: str, reservation: Any) -> None:
        self._op("unreserve", domain, str(reservation))
        self.may_be_ready(domain)

    def finish(self, domain: str, holder: str = "") -> None:
        self.policy.finish(self.state(domain))
        store = self.store
        self.link.submit(Op(send=lambda pipe: store.finish(domain, holder, client=pipe)))
        self.may_be_ready(domain)

    # --- outcomes ----------------------------------------------------------------------------
    def success(self, domain: str, latency: float | None = None, sent_at: float | None = None) -> Outcome:
        departure = self._departure(sent_at)
        outcome = self._apply(domain, lambda s, now: self.policy.on_success(s, now, latency, departure(now)))
        self.may_be_ready(domain)
        return outcome

    def failure(self, domain: str) -> bool:
        return self._apply(domain, lambda s, now: self.policy.on_failure(s, now))

    def blocked(self, domain: str, retry_after: float | None = None, sent_at: float | None = None) -> Outcome:
        departure = self._departure(sent_at)
        return self._apply(domain, lambda s, now: self.policy.on_blocked(s, now, retry_after, departure(now)))

    def _departure(self, sent_at: float | None) -> Callable[[float], float | None]:
        """When a request left (``sent_at``, this process's clock) in the clock of each change of
        its domain, as an age counted from the change's ``now``: this process's, then the
        server's, so that in the transaction, which decides the shared state, no skew between
        the two decides whether the request left before a block (stamped in the server's
        clock). This process's own answer (its stats, the delay it stores) compares the age with
        its copy's stamps, read from the server: a skew of the two clocks can make it judge a
        refusal otherwise than the transaction does."""
        if sent_at is None:
            return lambda now: None
        timer = self._timer
        age, asked = self.clock() - sent_at, timer()
        return lambda now: now - age - (timer() - asked)

    def set_robots_delay(self, domain: str, delay: float | None) -> None:
        self._apply(domain, lambda s, now: self.policy.set_robots_delay(s, delay, now))
        self.may_be_ready(domain)

    async def set_controls(self, controls: ControlTable) -> None:
        """Write the controls that changed into the shared state of the crawl's domains (one
        transaction per changed domain, on the link); new domains get them with their first
        change."""
        previous, self.controls = self.controls, controls
        store = self.store
        try:
            names = set(await self.link.run(lambda _: store.domain_names()))
        except REDIS_ERRORS:
            names = set()  # Redis away: the domains this process knows, below; the others later
        for domain in names | set(self.states):
            control = controls.for_domain(domain)
            if control != previous.for_domain(domain):
                self._apply(domain, lambda state, now, control=control: control.apply(state))
                self.may_be_ready(domain)

    async def reset(self, domain: str) -> DomainState:
        def reset(state: DomainState, now: float) -> DomainState:
            self.policy.reset(state)
            return state

        state = self._apply(domain, reset)
        self.may_be_ready(domain)
        return state

    def learned(self, domain: str, delay: float, floor: float) -> None:
        """Seed a domain with what earlier crawls learned, unless the running crawl has learned
        something of its own for it (another process was there first)."""

        def seed(state: DomainState, now: float) -> None:
            if not (state.learned_delay or state.floor):
                state.learned_delay, state.floor = delay, floor

        self._apply(domain, seed)


def _decode(fields: list[Any]) -> DomainState:
    state = DomainState(**json.loads(fields[0])) if fields[0] else DomainState()
    for attribute, value in zip(_APART_ATTRIBUTES, fields[1:], strict=True):
        if value is not None:
            setattr(state, attribute, float(value))
    return state


def _keep_stricter(copy: DomainState, answer: DomainState) -> None:
    """What an answer older than this process's latest change of the domain still tells its copy:
    a block, or a slot taken, by another process meanwhile. A domain this process keeps changing
    (each request that leaves is a change) would otherwise not hear of them."""
    copy.blocked_until = max(copy.blocked_until, answer.blocked_until)
    copy.blocked_at = max(copy.blocked_at, answer.blocked_at)
    copy.next_start = max(copy.next_start, answer.next_start)

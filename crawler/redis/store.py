"""The crawl's state in Redis: per-domain queues, ready times, slots, leases and domain state,
changed only through one Lua script (``frontier.lua``) so that every change is atomic across
processes. The frontier's queue, the limiter and the robots.txt cache call it; no Scrapy here:
requests arrive encoded, times come from an injectable clock.

The state is split into shards (``shards.py``): an operation on a domain runs in the domain's
shard; a pop, an acknowledgement or a count runs in the shard it names; the sizes are the sum of
the shards'. The crawl's own keys (its mark, its shard count, the robots.txt cache, the scope)
stay under the crawl's prefix.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import IntEnum
from importlib.resources import files
from typing import Any

import redis

from crawler.redis.keys import as_text, delete_matching
from crawler.redis.scripts import call_script, register_script, with_scripts
from crawler.redis.shards import shard_index, shard_pattern, shard_prefixes

MARK_SEEN = files("crawler.redis").joinpath("seen.lua").read_text(encoding="utf-8")
"""The seen filters' marking, shared by the frontier script and the filters' own."""
SCRIPT = MARK_SEEN + files("crawler.redis").joinpath("frontier.lua").read_text(encoding="utf-8")


@dataclass(frozen=True, slots=True)
class FrontierConfig:
    default_delay: float = 1.0
    """The delay of a domain the policy has not written yet (the baseline of a new domain)."""
    default_concurrency: int = 2
    robots: bool = True
    """Hand a domain's requests out only once its robots.txt is known."""
    lease_seconds: float = 120.0
    max_deliveries: int = 5
    """How many times a request may be handed out before it goes to the dead-letter list."""
    spill_above: int = 0
    """A domain queuing more requests than this may spill the tail of its queue to PostgreSQL
    when it is cold (``crawler.frontier.spill``); 0: never."""
    spill_keep: int = 0
    """How many requests a spilled domain keeps in Redis."""
    spill_cold_seconds: float = 30.0
    """A domain whose next request may not go for this long is cold."""
    mover_claim_seconds: float = 60.0
    """How long a mover holds a domain it spills or refills (a dead mover's claim expires)."""
    turn_seconds: float = 0.0
    """How long a slot freed at a domain's concurrency is left to a process that found nothing at
    its last ask (its poll time: it asks again by then); 0: no turns (see Turns in frontier.lua)."""

    @property
    def refill_below(self) -> int:
        """A cold domain whose queue in Redis falls under this length is refilled (0: no spill)."""
        return max(1, self.spill_keep // 2) if self.spill_above else 0


@dataclass(frozen=True, slots=True)
class Popped:
    kind: str
    """``request``, ``robots`` (fetch the domain's robots.txt on the reserved slot), ``dead``
    (a request past the delivery cap, for a row) or ``none``."""
    domain: str = ""
    request: str = ""
    """The encoded request, or the scheme for ``robots``."""
    reservation: str = ""
    leave_in: float = 0.0
    """For ``request``: seconds after the frontier's ``now`` before it may leave (handed out
    ahead of its slot)."""
    next_ready: float | None = None
    """For ``none``: the earliest time anything may become ready (a domain, a delayed retry, an expiring lease)."""


@dataclass(frozen=True, slots=True)
class PopBatch:
    now: float
    """The frontier's clock when it answered."""
    popped: list[Popped]
    wait: float | None
    """When fewer than asked came: seconds until anything may become ready (None: nothing
    is queued, delayed or leased)."""


@dataclass(frozen=True, slots=True)
class Spill:
    """The tail of a cold domain's queue a mover claimed: the shard's run (the rows' name), the
    domain, and its (priority, encoded request) entries, still queued."""

    run: str
    domain: str
    entries: list[tuple[int, str]]


def _pairs(parts: list[str]) -> list[tuple[int, str]]:
    return [(int(parts[i]), parts[i + 1]) for i in range(0, len(parts), 2)]


def _flat(entries: list[tuple[int, str]]) -> list[int | str]:
    """(priority, request) pairs as the script's arguments: ``_pairs`` the other way."""
    return [part for priority, request in entries for part in (priority, request)]


RUNNING, COMPLETE = b"running", b"complete"
"""The crawl's mark (``P:born``): running, or ended and cleared."""
COMPLETE_SECONDS = 3600
DEFAULT_SHARDS = 16

DOMAIN_OPERATIONS = frozenset(
    {
        "push",
        "try_reserve",
        "reslot",
        "give_back",
        "rehold",
        "sent",
        "unreserve",
        "finish",
        "update",
        "robots_stored",
        "spill_remove",
        "refill",
    }
)
"""Operations of the script whose first argument is a domain: they run in its shard."""


@dataclass(frozen=True, slots=True)
class FrontierSizes:
    queued: int
    delayed: int
    leased: int
    reclaimed: int
    dead: int = 0
    spilled: int = 0
    """Requests of cold domains in PostgreSQL (``frontier_spill``): queued too."""

    @property
    def empty(self) -> bool:
        return not (self.queued or self.delayed or self.leased or self.spilled)

    @property
    def waiting(self) -> int:
        """Requests waiting to go: queued in Redis, waiting to retry, or spilled."""
        return self.queued + self.delayed + self.spilled

    @classmethod
    def total(cls, answers: Iterable[Any]) -> FrontierSizes:
        """The sum of the shards' answers to ``sizes``."""
        return cls(*(sum(int(part) for part in parts) for parts in zip(*answers, strict=True)))


class FrontierStore:
    def __init__(
        self,
        client: redis.Redis,
        prefix: str,
        config: FrontierConfig = FrontierConfig(),
        clock: Callable[[], float] | None = None,
        shards: int = DEFAULT_SHARDS,
    ):
        """``clock``: None for the Redis server's (what processes of a crawl share); tests
        pass their own. ``shards``: the crawl's shard count (``shards.agreed_count``)."""
        self.client = client
        self.prefix = prefix
        self.shards = shard_prefixes(prefix, shards)
        self.config = config
        self.clock = clock
        self.script = register_script(client, SCRIPT)
        self.process = secrets.token_hex(6)
        """This store's name in the shards' turns (one store per process)."""
        self.begun = False
        """Whether this process began the crawl (``begin``): then its pops and reservations
        need the crawl's mark, so that nothing is reserved in keys that vanished."""

    def key(self, *parts: str) -> str:
        """A key of the crawl's own (not of a shard)."""
        return ":".join((self.prefix, *parts))

    def shard_of(self, domain: str) -> str:
        return self.shards[shard_index(domain, len(self.shards))]

    def domain_part(self, domain: str, *parts: str) -> str:
        """A key in the domain's shard: ``domain_part(d, "q", d, "0")``."""
        return ":".join((self.shard_of(domain), *parts))

    def arguments(self, operation: str, *args: Any) -> list[Any]:
        """The script's arguments for ``operation``."""
        config = self.config
        return [
            operation,
            "" if self.clock is None else repr(self.clock()),
            repr(config.default_delay),
            config.default_concurrency,
            int(config.robots),
            repr(config.lease_seconds),
            config.max_deliveries,
            *args,
        ]

    def call(self, operation: str, *args: Any, client: Any = None) -> Any:
        """Run (or, with a pipeline as ``client``, queue) one operation of the script on a
        domain (``args[0]``), in the domain's shard."""
        if operation not in DOMAIN_OPERATIONS:
            raise ValueError(f"{operation} runs in a shard: call_in")
        return self.call_in(self.shard_of(args[0]), operation, *args, client=client)

    def call_in(self, shard: str, operation: str, *args: Any, client: Any = None) -> Any:
        """Run (or queue) one operation of the script in ``shard`` (one of ``shards``)."""
        return call_script(self.script, [shard], self.arguments(operation, *args), client)

    def in_every_shard(self, operation: str, *args: Any) -> list[Any]:
        """One operation in every shard, in one round trip; the shards' answers."""

        def every_shard() -> list[Any]:
            with self.client.pipeline(transaction=False) as pipe:
                for shard in self.shards:
                    self.call_in(shard, operation, *args, client=pipe)
                return pipe.execute()

        return with_scripts(self.client, every_shard)

    def now(self) -> float:
        """The frontier's clock."""
        if self.clock is not None:
            return self.clock()
        seconds, micros = self.client.time()
        return seconds + micros / 1e6

    # --- the queue ---------------------------------------------------------------------------
    def push_arguments(
        self,
        domain: str,
        priority: int,
        request: str,
        not_before: float,
        scheme: str,
        seen: tuple[str, ...] | None,
        *,
        lease_held: bool = False,
    ) -> list[Any]:
        """``lease_held``: the request is a retry or redirect of one this process was handed."""
        # Sent as a wait, not a time: the server's clock may differ from this machine's.
        wait = max(0.0, not_before - (self.clock or time.time)()) if not_before else 0.0
        holder = self.process if lease_held else ""
        return ["push", domain, priority, request, repr(wait), scheme, self.config.spill_above, holder, *(seen or ())]

    def push(
        self,
        domain: str,
        priority: int,
        request: str,
        *,
        not_before: float = 0.0,
        scheme: str = "http",
        seen: tuple[str, ...] | None = None,
        lease_held: bool = False,
    ) -> bool:
        """Queue a request; with ``seen`` (a seen-filter set and value), only if not seen
        before, marked seen in the same atomic step. False when it was not queued: seen, or a
        retry or redirect (``lease_held``) of a lease another process was handed since (``Pushed``)."""
        arguments = self.push_arguments(domain, priority, request, not_before, scheme, seen, lease_held=lease_held)
        answer = self.call(*arguments)
        return Pushed(answer) is Pushed.QUEUED

    def pop(self, lead: float = 0.0) -> Popped:
        batch = self.pop_many(1, lead)
        if batch.popped:
            return batch.popped[0]
        return Popped("none", next_ready=None if batch.wait is None else batch.now + batch.wait)

    def pop_arguments(self, count: int, lead: float) -> list[Any]:
        """A pop's operation and arguments, to run in a shard (``call_in``)."""
        return [
            "pop",
            count,
            repr(lead),
            int(self.begun),
            self.config.refill_below,
            self.process,
            repr(self.config.turn_seconds),
        ]

    def pop_many(self, count: int, lead: float = 0.0, shard: str | None = None) -> PopBatch:
        """At most ``count`` requests of ``shard``; of any shard if None, the shards whose
        domains are ready first asked first (tests and tools: workers choose their shards
        themselves, ``shard_choice``)."""
        if shard is not None:
            return parse_pop(self.call_in(shard, *self.pop_arguments(count, lead)))
        with self.client.pipeline(transaction=False) as pipe:
            for name in self.shards:
                pipe.zrange(f"{name}:ready", 0, 0, withscores=True)
            firsts = pipe.execute()
        order = sorted(range(len(self.shards)), key=lambda i: firsts[i][0][1] if firsts[i] else math.inf)
        popped: list[Popped] = []
        waits: list[float] = []
        now = None
        for index in order:
            wanted = count - sum(entry.kind != "dead" for entry in popped)
            batch = parse_pop(self.call_in(self.shards[index], *self.pop_arguments(wanted, lead)))
            now = batch.now if now is None else now
            popped.extend(batch.popped)
            if sum(entry.kind != "dead" for entry in batch.popped) >= wanted:
                return PopBatch(now, popped, None)
            if batch.wait is not None:
                waits.append(batch.now + batch.wait - now)
        assert now is not None
        return PopBatch(now, popped, max(0.0, min(waits)) if waits else None)

    def ack(self, keys: Iterable[str], domain: str) -> None:
        """Acknowledge leases of requests handed out for ``domain``."""
        if keys := list(keys):
            self.ack_in(self.shard_of(domain), keys)

    def ack_in(self, shard: str, keys: Iterable[str], client: Any = None) -> Any:
        """Acknowledge this process's leases of ``shard`` (or, with a pipeline as ``client``,
        queue it there); a lease handed out again to another process is left to it."""
        return self.call_in(shard, "ack", self.process, *keys, client=client)

    def release(self, keys: Iterable[str], domain: str, *, returned: bool = True) -> None:
        """Put leased requests of ``domain`` back at the front of its queues; ``returned``: they
        were handed out and came back unfinished (counted against the delivery cap)."""
        if keys := list(keys):
            self.release_in(self.shard_of(domain), keys, returned=returned)

    def release_in(self, shard: str, keys: Iterable[str], *, returned: bool, client: Any = None) -> Any:
        """``release`` in ``shard`` (or queued on the pipeline ``client``); a lease handed out
        again to another process is left to it."""
        return self.call_in(shard, "release", int(returned), self.process, *keys, client=client)

    def renew(self, keys: Iterable[str], domain: str, client: Any = None) -> Any:
        """Extend the leases of ``domain`` this process still holds (``renew_in``)."""
        return self.renew_in(self.shard_of(domain), keys, client)

    def renew_in(self, shard: str, keys: Iterable[str], client: Any = None) -> Any:
        """Extend the leases of ``shard`` this process still holds: a ``Renewal`` (or, with a
        pipeline as ``client``, the command queued there, whose answer ``Renewal.of`` reads)."""
        answer = self.call_in(shard, "renew", self.process, *keys, client=client)
        return answer if client is not None else Renewal.of(answer)

    def sizes(self, *, beat: bool = False) -> FrontierSizes:
        """The sum of the shards'; ``beat``: asked by a worker of the crawl, which keeps the
        crawl alive."""
        return FrontierSizes.total(self.in_every_shard("beat" if beat else "sizes"))

    def dead_letters(self) -> list[str]:
        """The encoded requests past the delivery cap."""
        return [
            as_text(entry).split("\t", 2)[2]
            for shard in self.shards
            for entry in self.client.lrange(f"{shard}:dead", 0, -1)
        ]

    def last_used(self) -> float | None:
        """When a worker last used any shard of the crawl (the server's clock), or None."""
        stamps = [self.client.get(f"{shard}:alive") for shard in self.shards]
        used = [float(stamp) for stamp in stamps if stamp is not None]
        return max(used) if used else None

    # --- cold domains (``crawler.frontier.spill`` moves them) -------------------------------------
    def spill_take(self, shard: str, claimant: str, most: int, candidates: int = 100) -> Spill | None:
        """Claim a domain of ``shard`` that queued more than ``spill_above`` requests, its tail
        cold (``frontier.lua``): the tail of its queue beyond ``spill_keep`` (at most ``most``),
        still queued; None if none."""
        config = self.config
        answer = self.call_in(
            shard,
            "spill_take",
            claimant,
            repr(config.mover_claim_seconds),
            repr(config.spill_cold_seconds),
            config.spill_keep,
            most,
            candidates,
        )
        if not answer:
            return None
        parts = [as_text(part) for part in answer]
        return Spill(parts[0], parts[1], _pairs(parts[2:]))

    def spill_remove(self, spill: Spill, claimant: str) -> list[bool] | None:
        """Remove the spilled requests still queued (their rows are written); for each, whether
        it was; None if the claim was lost (nothing removed)."""
        config = self.config
        answer = self.call(
            "spill_remove", spill.domain, claimant, config.spill_keep, config.refill_below, *_flat(spill.entries)
        )
        return None if answer is None else [bool(int(flag)) for flag in answer]

    def refill_take(self, shard: str, claimant: str) -> tuple[str, str, int] | None:
        """Claim a domain of ``shard`` due for a refill: the shard's run, the domain and how many
        requests to bring back; None if none."""
        config = self.config
        answer = self.call_in(
            shard, "refill_take", claimant, repr(config.mover_claim_seconds), config.spill_keep, config.refill_below
        )
        if not answer:
            return None
        run, domain, wanted = (as_text(part) for part in answer)
        return run, domain, int(wanted)

    def refill(self, domain: str, claimant: str, entries: list[tuple[int, str]], more: bool) -> int | None:
        """Queue ``entries`` (read from the table) again; ``more``: the table holds more of the
        domain's. How many, or None if the claim was lost (nothing queued)."""
        answer = self.call("refill", domain, claimant, int(more), self.config.refill_below, *_flat(entries))
        return None if answer is None else int(answer)

    def spill_runs(self, claimant: str) -> list[str]:
        """The run of each shard (made now where there is none): the names of the rows the crawl
        may read."""
        return [as_text(run) for run in self.in_every_shard("spill_run", claimant)]

    # --- domain slots ------------------------------------------------------------------------
    def try_reserve_arguments(self, domain: str, holder: str, *, stale: bool = False) -> list[Any]:
        """``stale``: for a handed-out request whose slot went stale before it left (``reslot``)."""
        return ["reslot" if stale else "try_reserve", domain, holder, int(self.begun)]

    def try_reserve(self, domain: str, holder: str, *, stale: bool = False) -> str | None:
        answer = self.call(*self.try_reserve_arguments(domain, holder, stale=stale))
        return as_text(answer) if answer else None

    def sent(self, domain: str, ago: float = 0.0) -> float:
        """The domain's slot counts from ``ago`` seconds before now, when its request left (its
        hold until the request left ends); returns the delay in force."""
        return float(as_text(self.call("sent", domain, repr(ago))))

    def unreserve(self, domain: str, reservation: str) -> None:
        self.call("unreserve", domain, reservation)

    def finish(self, domain: str, holder: str, *, client: Any = None) -> None:
        """The request of ``holder`` finished: its share of the domain's concurrency is free (but
        a lease handed out again to another process, whose share it is now)."""
        self.call("finish", domain, holder, self.process, client=client)

    def update(self, domain: str, fields: dict[str, Any], *, client: Any = None) -> None:
        pairs = [str(part) for item in fields.items() for part in item]
        self.call("update", domain, *pairs, client=client)

    def robots_stored(self, domain: str, valid_until: float) -> None:
        self.call("robots_stored", domain, repr(valid_until))

    def domain_key(self, domain: str) -> str:
        return self.domain_part(domain, "d", domain)

    def seen_key(self, domain: str) -> str:
        """Where the seen marks of a domain's requests lie: in its shard, so that the script
        queues a request and marks it seen in one step in one slot."""
        return self.domain_part(domain, "seen")

    # --- inspection --------------------------------------------------------------------------
    def domains(self) -> list[dict[str, Any]]:
        """Per domain: queued requests (in Redis, and spilled to PostgreSQL), ready time, block,
        delay, concurrency, holders."""
        now = self.now()
        names = self.domain_names()
        ready = {
            as_text(d): score
            for shard in self.shards
            for d, score in self.client.zrange(f"{shard}:ready", 0, -1, withscores=True)
        }
        loads = self.domain_loads(names, now)
        rows = []
        for domain in names:
            inflight, queued = loads[domain]
            state = {as_text(k): as_text(v) for k, v in self.client.hgetall(self.domain_key(domain)).items()}
            rows.append(
                {
                    "domain": domain,
                    "queued": queued,
                    "spilled": int(state.get("spilled", 0)),
                    "ready_in": max(0.0, ready[domain] - now) if domain in ready else None,
                    "blocked_for": max(0.0, float(state.get("hold", 0)) - now),
                    "delay": float(state["delay"]) if "delay" in state else self.config.default_delay,
                    "concurrency": int(state["limit"]) if "limit" in state else self.config.default_concurrency,
                    "in_flight": inflight,
                }
            )
        return rows

    def domain_names(self) -> list[str]:
        """Every domain ever queued in the crawl, sorted."""
        return sorted({as_text(d) for shard in self.shards for d in self.client.smembers(f"{shard}:domains")})

    def domain_loads(self, domains: list[str], now: float | None = None) -> dict[str, tuple[int, int]]:
        """Each domain's requests in flight (slots held) and queued, in two round trips."""
        now = self.now() if now is None else now
        with self.client.pipeline(transaction=False) as pipe:
            for domain in domains:
                pipe.zrange(self.domain_part(domain, "qp", domain), 0, -1)
                pipe.zcount(self.domain_part(domain, "inflight", domain), now, "+inf")
            answers = pipe.execute()
        prios, inflight = answers[0::2], answers[1::2]
        with self.client.pipeline(transaction=False) as pipe:
            for domain, domain_prios in zip(domains, prios):
                for prio in domain_prios:
                    pipe.llen(self.domain_part(domain, "q", domain, as_text(prio)))
            lengths = iter(pipe.execute())
        return {
            domain: (held, sum(next(lengths) for _ in domain_prios))
            for domain, domain_prios, held in zip(domains, prios, inflight)
        }

    def clear(self) -> int:
        """Delete every key of the crawl but its mark and its shard count, so that workers still
        open go on as the crawl was (an operator emptied it; its keys did not vanish); the number
        deleted."""
        return self.delete_all(keep={*self._marks(), self.key("shards").encode()})

    def delete_all(self, keep: set[bytes]) -> int:
        """Delete every key of the crawl and of its shards but those in ``keep``; the number deleted."""
        return sum(
            delete_matching(self.client, pattern, keep=keep)
            for pattern in (f"{self.prefix}:*", shard_pattern(self.prefix))
        )

    def begin(self) -> None:
        """Mark the crawl running (a joining worker finds it so; one that ended begins again),
        and each shard with it: the frontier script reads the mark of its own shard (a cluster
        runs a script on the keys of one slot)."""
        with self.client.pipeline(transaction=False) as pipe:
            for mark in self._marks():
                pipe.set(mark, RUNNING)
            pipe.execute()
        self.begun = True

    def _marks(self) -> list[bytes]:
        """The crawl's mark and its shards'."""
        return [key.encode() for key in (self.key("born"), *(f"{shard}:born" for shard in self.shards))]

    def complete(self) -> int:
        """Delete every key of the ended crawl but its mark, which says so for an hour to the
        workers still open; the number deleted (its shard count too: the next run chooses)."""
        marks = self._marks()
        deleted = self.delete_all(keep=set(marks))
        # The shards' marks say so too: a worker still open may yet reserve a slot of a domain
        # (a soft-404 probe it kept), which a vanished mark would refuse for ever.
        with self.client.pipeline(transaction=False) as pipe:
            for mark in marks:
                pipe.set(mark, COMPLETE, ex=COMPLETE_SECONDS)
            pipe.execute()
        return deleted


class Pushed(IntEnum):
    """What a push did (the script's answer)."""

    QUEUED = 1
    SEEN = 0
    LEASED_ELSEWHERE = -1
    """Not queued: a retry or redirect of a request whose lease went to another process while
    this one stood still past it. That process fetches the request and follows it."""


@dataclass(frozen=True, slots=True)
class Renewal:
    """What a ``renew`` did: how many leases it extended, and the keys whose leases are another
    process's now (this one stopped for longer than a lease; the request went to that one)."""

    renewed: int
    lost: list[str]

    @classmethod
    def of(cls, answer: list[Any] | None) -> Renewal:
        if not answer:
            return cls(0, [])
        return cls(int(answer[0]), [as_text(key) for key in answer[1:]])


def parse_pop(answer: list[Any]) -> PopBatch:
    now = float(answer[0])
    popped = [
        Popped(*(as_text(part) for part in answer[i : i + 4]), float(answer[i + 4]))  # type: ignore[arg-type]
        for i in range(1, len(answer) - 4, 5)
    ]
    rest = answer[1 + 5 * len(popped) :]
    wait = float(rest[0]) if rest and as_text(rest[0]) else None
    return PopBatch(now, popped, wait)

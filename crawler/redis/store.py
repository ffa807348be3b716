"""The crawl's state in Redis: per-domain queues, ready times, slots, leases and domain state,
changed only through one Lua script (``frontier.lua``) so that every change is atomic across
processes. The frontier's queue, the limiter and the robots.txt cache call it; no Scrapy here:
requests arrive encoded, times come from an injectable clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

import redis

from crawler.redis.keys import as_text, delete_matching

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


RUNNING, COMPLETE = b"running", b"complete"
"""The crawl's mark (``P:born``): running, or ended and cleared."""
COMPLETE_SECONDS = 3600


@dataclass(frozen=True, slots=True)
class FrontierSizes:
    queued: int
    delayed: int
    leased: int
    reclaimed: int
    dead: int = 0

    @property
    def empty(self) -> bool:
        return not (self.queued or self.delayed or self.leased)


class FrontierStore:
    def __init__(
        self,
        client: redis.Redis,
        prefix: str,
        config: FrontierConfig = FrontierConfig(),
        clock: Callable[[], float] | None = None,
    ):
        """``clock``: None for the Redis server's (what processes of a crawl share); tests
        pass their own."""
        self.client = client
        self.prefix = prefix
        self.config = config
        self.clock = clock
        self.script = client.register_script(SCRIPT)
        self.begun = False
        """Whether this process began the crawl (``begin``): then its pops and reservations
        need the crawl's mark, so that nothing is reserved in keys that vanished."""

    def key(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

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
        """Run (or, with a pipeline as ``client``, queue) one operation of the script."""
        return self.script(keys=[self.prefix], args=self.arguments(operation, *args), client=client)

    def now(self) -> float:
        """The frontier's clock."""
        if self.clock is not None:
            return self.clock()
        seconds, micros = self.client.time()
        return seconds + micros / 1e6

    # --- the queue ---------------------------------------------------------------------------
    def push_arguments(
        self, domain: str, priority: int, request: str, not_before: float, scheme: str, seen: tuple[str, ...] | None
    ) -> list[Any]:
        # Sent as a wait, not a time: the server's clock may differ from this machine's.
        wait = max(0.0, not_before - (self.clock or time.time)()) if not_before else 0.0
        return ["push", domain, priority, request, repr(wait), scheme, *(seen or ())]

    def push(
        self,
        domain: str,
        priority: int,
        request: str,
        *,
        not_before: float = 0.0,
        scheme: str = "http",
        seen: tuple[str, ...] | None = None,
    ) -> bool:
        """Queue a request; with ``seen`` (a seen-filter set and value), only if not seen
        before, marked seen in the same atomic step. False when it was seen."""
        return bool(self.call(*self.push_arguments(domain, priority, request, not_before, scheme, seen)))

    def pop(self, lead: float = 0.0) -> Popped:
        batch = self.pop_many(1, lead)
        if batch.popped:
            return batch.popped[0]
        return Popped("none", next_ready=None if batch.wait is None else batch.now + batch.wait)

    def pop_arguments(self, count: int, lead: float) -> list[Any]:
        return ["pop", count, repr(lead), int(self.begun)]

    def pop_many(self, count: int, lead: float = 0.0) -> PopBatch:
        return parse_pop(self.call(*self.pop_arguments(count, lead)))

    def ack(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        if keys:
            self.call("ack", *keys)

    def release(self, keys: Iterable[str], *, returned: bool = True) -> None:
        """Put leased requests back at the front of their queues; ``returned``: they were
        handed out and came back unfinished (counted against the delivery cap)."""
        keys = list(keys)
        if keys:
            self.call("release", int(returned), *keys)

    def renew(self, keys: Iterable[str]) -> int:
        """Extend the leases still held; how many were."""
        keys = list(keys)
        return self.call("renew", *keys) if keys else 0

    def sizes(self, *, beat: bool = False) -> FrontierSizes:
        """``beat``: asked by a worker of the crawl, which keeps the crawl alive."""
        return FrontierSizes(*self.call("beat" if beat else "sizes"))

    def dead_letters(self) -> list[str]:
        """The encoded requests past the delivery cap."""
        return [as_text(entry).split("\t", 2)[2] for entry in self.client.lrange(self.key("dead"), 0, -1)]

    # --- domain slots ------------------------------------------------------------------------
    def try_reserve_arguments(self, domain: str, holder: str) -> list[Any]:
        return ["try_reserve", domain, holder, int(self.begun)]

    def try_reserve(self, domain: str, holder: str) -> str | None:
        answer = self.call(*self.try_reserve_arguments(domain, holder))
        return as_text(answer) if answer else None

    def sent(self, domain: str, ago: float = 0.0) -> float:
        """The domain's slot counts from ``ago`` seconds before now, when its request left (its
        hold until the request left ends); returns the delay in force."""
        return float(as_text(self.call("sent", domain, repr(ago))))

    def unreserve(self, domain: str, reservation: str) -> None:
        self.call("unreserve", domain, reservation)

    def finish(self, domain: str, holder: str) -> None:
        self.call("finish", domain, holder)

    def update(self, domain: str, fields: dict[str, Any], *, client: Any = None) -> None:
        pairs = [str(part) for item in fields.items() for part in item]
        self.call("update", domain, *pairs, client=client)

    def robots_stored(self, domain: str, valid_until: float) -> None:
        self.call("robots_stored", domain, repr(valid_until))

    def domain_key(self, domain: str) -> str:
        return self.key("d", domain)

    # --- inspection --------------------------------------------------------------------------
    def domains(self) -> list[dict[str, Any]]:
        """Per domain: queued requests, ready time, block, delay, concurrency, holders."""
        now = self.now()
        names = sorted(as_text(d) for d in self.client.smembers(self.key("domains")))
        ready = {as_text(d): score for d, score in self.client.zrange(self.key("ready"), 0, -1, withscores=True)}
        loads = self.domain_loads(names, now)
        rows = []
        for domain in names:
            inflight, queued = loads[domain]
            state = {as_text(k): as_text(v) for k, v in self.client.hgetall(self.domain_key(domain)).items()}
            rows.append(
                {
                    "domain": domain,
                    "queued": queued,
                    "ready_in": max(0.0, ready[domain] - now) if domain in ready else None,
                    "blocked_for": max(0.0, float(state.get("hold", 0)) - now),
                    "delay": float(state["delay"]) if "delay" in state else self.config.default_delay,
                    "concurrency": int(state["limit"]) if "limit" in state else self.config.default_concurrency,
                    "in_flight": inflight,
                }
            )
        return rows

    def domain_loads(self, domains: list[str], now: float | None = None) -> dict[str, tuple[int, int]]:
        """Each domain's requests in flight (slots held) and queued, in two round trips."""
        now = self.now() if now is None else now
        with self.client.pipeline(transaction=False) as pipe:
            for domain in domains:
                pipe.zrange(self.key("qp", domain), 0, -1)
                pipe.zcount(self.key("inflight", domain), now, "+inf")
            answers = pipe.execute()
        prios, inflight = answers[0::2], answers[1::2]
        with self.client.pipeline(transaction=False) as pipe:
            for domain, domain_prios in zip(domains, prios):
                for prio in domain_prios:
                    pipe.llen(self.key("q", domain, as_text(prio)))
            lengths = iter(pipe.execute())
        return {
            domain: (held, sum(next(lengths) for _ in domain_prios))
            for domain, domain_prios, held in zip(domains, prios, inflight)
        }

    def clear(self) -> int:
        """Delete every key of the crawl but its mark, so that workers still open go on as the
        crawl was (an operator emptied it; its keys did not vanish); the number deleted."""
        return delete_matching(self.client, f"{self.prefix}:*", keep={self.key("born").encode()})

    def begin(self) -> None:
        """Mark the crawl running (a joining worker finds it so; one that ended begins again)."""
        self.client.set(self.key("born"), RUNNING)
        self.begun = True

    def complete(self) -> int:
        """Delete every key of the ended crawl but its mark, which says so for an hour to the
        workers still open; the number deleted."""
        deleted = self.clear()
        self.client.set(self.key("born"), COMPLETE, ex=COMPLETE_SECONDS)
        return deleted


def parse_pop(answer: list[Any]) -> PopBatch:
    now = float(answer[0])
    popped = [
        Popped(*(as_text(part) for part in answer[i : i + 4]), float(answer[i + 4]))  # type: ignore[arg-type]
        for i in range(1, len(answer) - 4, 5)
    ]
    rest = answer[1 + 5 * len(popped) :]
    wait = float(rest[0]) if rest and as_text(rest[0]) else None
    return PopBatch(now, popped, wait)

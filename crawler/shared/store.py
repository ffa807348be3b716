"""The shared frontier in Redis: per-domain queues, ready times, slots, leases and domain state,
changed only through one Lua script (``frontier.lua``) so that every change is atomic across
processes. No Scrapy here: requests arrive encoded, times come from an injectable clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

import redis

SCRIPT = files("crawler.shared").joinpath("frontier.lua").read_text(encoding="utf-8")


@dataclass(frozen=True, slots=True)
class FrontierConfig:
    default_delay: float = 1.0
    """The delay of a domain the policy has not written yet (the baseline of a new domain)."""
    default_concurrency: int = 2
    robots: bool = True
    """Hand a domain's requests out only once its robots.txt is known."""
    lease_seconds: float = 120.0


@dataclass(frozen=True, slots=True)
class Popped:
    kind: str
    """``request``, ``robots`` (fetch the domain's robots.txt on the reserved slot) or ``none``."""
    domain: str = ""
    request: str = ""
    """The encoded request, or the scheme for ``robots``."""
    reservation: str = ""
    next_ready: float | None = None
    """For ``none``: the earliest time anything may become ready (a domain, a delayed retry, an expiring lease)."""


@dataclass(frozen=True, slots=True)
class FrontierSizes:
    queued: int
    delayed: int
    leased: int
    reclaimed: int

    @property
    def empty(self) -> bool:
        return not (self.queued or self.delayed or self.leased)


class SharedFrontier:
    def __init__(
        self,
        client: redis.Redis,
        prefix: str,
        config: FrontierConfig = FrontierConfig(),
        clock: Callable[[], float] = time.time,
    ):
        self.client = client
        self.prefix = prefix
        self.config = config
        self.clock = clock
        self._script = client.register_script(SCRIPT)

    def key(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    def _call(self, operation: str, *args: Any, client: Any = None) -> Any:
        config = self.config
        return self._script(
            keys=[self.prefix],
            args=[
                operation,
                repr(self.clock()),
                repr(config.default_delay),
                config.default_concurrency,
                int(config.robots),
                repr(config.lease_seconds),
                *args,
            ],
            client=client,
        )

    # --- the queue ---------------------------------------------------------------------------
    def push(
        self,
        domain: str,
        priority: int,
        request: str,
        *,
        not_before: float = 0.0,
        scheme: str = "http",
        seen: tuple[str, int] | None = None,
    ) -> bool:
        """Queue a request; with ``seen`` (a seen-filter set and value), only if not seen
        before, marked seen in the same atomic step. False when it was seen."""
        marker = seen or ()
        return bool(self._call("push", domain, priority, request, repr(not_before), scheme, *marker))

    def pop(self) -> Popped:
        answer = self._call("pop")
        kind = _text(answer[0])
        if kind == "none":
            times = [float(t) for t in map(_text, answer[1:]) if t]
            return Popped("none", next_ready=min(times) if times else None)
        return Popped(kind, _text(answer[1]), _text(answer[2]), _text(answer[3]))

    def ack(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        if keys:
            self._call("ack", *keys)

    def release(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        if keys:
            self._call("release", *keys)

    def sizes(self) -> FrontierSizes:
        with self.client.pipeline(transaction=False) as pipe:
            pipe.get(self.key("queued"))
            pipe.zcard(self.key("delayed"))
            pipe.zcard(self.key("leases"))
            pipe.get(self.key("reclaimed"))
            queued, delayed, leased, reclaimed = pipe.execute()
        return FrontierSizes(int(queued or 0), delayed, leased, int(reclaimed or 0))

    # --- domain slots ------------------------------------------------------------------------
    def try_reserve(self, domain: str, holder: str) -> str | None:
        answer = self._call("try_reserve", domain, holder)
        return _text(answer) if answer else None

    def sent(self, domain: str) -> float:
        """The domain's slot counts from now; returns the delay in force."""
        return float(_text(self._call("sent", domain)))

    def unreserve(self, domain: str, reservation: str) -> None:
        self._call("unreserve", domain, reservation)

    def finish(self, domain: str, holder: str) -> None:
        self._call("finish", domain, holder)

    def update(self, domain: str, fields: dict[str, Any], *, client: Any = None) -> None:
        pairs = [str(part) for item in fields.items() for part in item]
        self._call("update", domain, *pairs, client=client)

    def robots_stored(self, domain: str, valid_until: float) -> None:
        self._call("robots_stored", domain, repr(valid_until))

    def domain_key(self, domain: str) -> str:
        return self.key("d", domain)

    # --- inspection --------------------------------------------------------------------------
    def domains(self) -> list[dict[str, Any]]:
        """Per domain: queued requests, ready time, block, delay, concurrency, holders."""
        now = self.clock()
        names = sorted(_text(d) for d in self.client.smembers(self.key("domains")))
        ready = {_text(d): score for d, score in self.client.zrange(self.key("ready"), 0, -1, withscores=True)}
        rows = []
        for domain in names:
            inflight, queued = self.domain_load(domain, now)
            state = {_text(k): _text(v) for k, v in self.client.hgetall(self.domain_key(domain)).items()}
            rows.append({
                "domain": domain,
                "queued": queued,
                "ready_in": max(0.0, ready[domain] - now) if domain in ready else None,
                "blocked_for": max(0.0, float(state.get("hold", 0)) - now),
                "delay": float(state["delay"]) if "delay" in state else self.config.default_delay,
                "concurrency": int(state["limit"]) if "limit" in state else self.config.default_concurrency,
                "in_flight": inflight,
            })  # fmt: skip
        return rows

    def domain_load(self, domain: str, now: float | None = None) -> tuple[int, int]:
        """The domain's requests in flight (slots held) and queued."""
        with self.client.pipeline(transaction=False) as pipe:
            pipe.zrange(self.key("qp", domain), 0, -1)
            pipe.zcount(self.key("inflight", domain), self.clock() if now is None else now, "+inf")
            prios, inflight = pipe.execute()
        with self.client.pipeline(transaction=False) as pipe:
            for prio in prios:
                pipe.llen(self.key("q", domain, _text(prio)))
            queued = sum(pipe.execute())
        return inflight, queued

    def clear(self) -> int:
        """Delete every key of the crawl; the number deleted."""
        return delete_matching(self.client, f"{self.prefix}:*")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def delete_matching(client: redis.Redis, pattern: str) -> int:
    """Delete the keys matching ``pattern`` (SCAN, never KEYS); the number deleted."""
    deleted, batch = 0, []
    for key in client.scan_iter(match=pattern, count=1000):
        batch.append(key)
        if len(batch) == 500:
            deleted += client.delete(*batch)
            batch = []
    return deleted + (client.delete(*batch) if batch else 0)

"""robots.txt files shared by the processes of a crawl through Redis: fetched once, read by all.

Read from this process's copy only: the shared frontier brings the files of the domains it
hands out here (``load``) before their requests go, through the crawl's link."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from crawler.redis.link import Op, RedisLink
from crawler.redis.store import FrontierStore
from crawler.robots.cache_local import RobotsEntry
from crawler.robots.rules import RobotsRules

Rules = Callable[[int | None, bytes, bool, str], RobotsRules]
"""How a process reads a stored fetch: its status, body, and for a fetch that got no answer (no
status) the verdict it was given and why."""


class RedisRobotsCache:
    def __init__(self, store: FrontierStore, link: RedisLink, rules: Rules):
        self.store = store
        self.link = link
        self.rules = rules
        self.key = store.key("robots")
        self.entries: dict[str, RobotsEntry] = {}

    def get(self, domain: str, now: float) -> RobotsEntry | None:
        """The domain's file if some process stored it, it was loaded here and it is still valid."""
        entry = self.entries.get(domain)
        return entry if entry is not None and entry.expires_at > now else None

    def load(self, domains: Iterable[str], done: Callable[[], None]) -> None:
        """Bring the files of ``domains`` here, then call ``done`` (also while Redis is away:
        this process then fetches its own)."""
        names = list(domains)

        def loaded(raws: Any) -> None:
            for domain, raw in zip(names, raws or ()):
                if raw is not None:
                    data = json.loads(raw)
                    status, body = data["s"], data["b"].encode("latin-1")
                    rules = self.rules(status, body, data.get("a", False), data.get("r", ""))
                    self.entries[domain] = RobotsEntry(rules, status, body, data["f"], data["x"])
            done()

        self.link.submit(Op(send=lambda pipe: pipe.hmget(self.key, names), done=loaded))

    def forget(self, domain: str) -> None:
        """Drop this process's copy of the domain's file (it stays in Redis)."""
        self.entries.pop(domain, None)

    def put(self, domain: str, entry: RobotsEntry) -> None:
        self.entries[domain] = entry
        rules = entry.rules
        data = json.dumps(
            {
                "s": entry.status,
                "b": entry.body.decode("latin-1"),
                "f": entry.fetched_at,
                "x": entry.expires_at,
                "a": rules.allow_all,
                "r": rules.reason,
            },
            separators=(",", ":"),
        )
        store = self.store
        self.link.submit(Op(send=lambda pipe: pipe.hset(self.key, domain, data)))
        # The domain's requests may be handed out now, by any process.
        self.link.submit(Op(send=lambda pipe: store.call("robots_stored", domain, repr(entry.expires_at), client=pipe)))

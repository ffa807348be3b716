"""robots.txt files shared by the processes of a crawl through Redis: fetched once, read by all.

Read from this process's cache only: the shared frontier brings the files of the domains it
hands out into it (``load``) before their requests go, through the crawl's link."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from crawler.redis.link import Op, RedisLink
from crawler.redis.store import FrontierStore
from crawler.robots.cache_local import RobotsCache, RobotsEntry
from crawler.robots.rules import RobotsRules

Rules = Callable[[int | None, bytes, bool, str], RobotsRules]
"""How a process reads a stored fetch: its status, body, and for a fetch that got no answer (no
status) the verdict it was given and why."""


class RedisRobotsCache:
    def __init__(self, store: FrontierStore, link: RedisLink, rules: Rules, local: RobotsCache):
        self.store = store
        self.link = link
        self.rules = rules
        self.local = local
        """This process's cache, which ``load`` fills."""
        self.key = store.key("robots")

    def load(self, domains: Iterable[str], done: Callable[[], None]) -> None:
        """Bring the files some process stored of ``domains`` into this process's cache, then call
        ``done`` (also while Redis is away: this process then fetches its own)."""
        names = list(domains)

        def loaded(raws: Any) -> None:
            for domain, raw in zip(names, raws or ()):
                if raw is not None:
                    data = json.loads(raw)
                    status, body = data["s"], data["b"].encode("latin-1")
                    rules = self.rules(status, body, data.get("a", False), data.get("r", ""))
                    self.local.put(domain, RobotsEntry(rules, status, body, data["f"], data["x"]))
            done()

        self.link.submit(Op(send=lambda pipe: pipe.hmget(self.key, names), done=loaded))

    def share(self, domain: str, entry: RobotsEntry) -> None:
        """Store a file this process has for the crawl's other processes."""
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

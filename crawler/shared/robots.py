"""robots.txt files shared by the processes of a crawl: fetched once, read by all.

Read from this process's copy only: the shared frontier brings the files of the domains it
hands out here (``load``) before their requests go, through the crawl's link."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from crawler.shared.link import Op, RedisLink
from crawler.shared.store import SharedFrontier

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SharedRobotsFile:
    status: int | None
    body: bytes
    fetched_at: float
    expires_at: float


class SharedRobots:
    def __init__(self, frontier: SharedFrontier, link: RedisLink):
        self.frontier = frontier
        self.link = link
        self.key = frontier.key("robots")
        self.files: dict[str, SharedRobotsFile] = {}

    def get(self, domain: str, now: float) -> SharedRobotsFile | None:
        """The domain's file if some process stored it, it was loaded here and it is still valid."""
        file = self.files.get(domain)
        return file if file is not None and file.expires_at > now else None

    def load(self, domains: Iterable[str], done: Callable[[], None]) -> None:
        """Bring the files of ``domains`` here, then call ``done`` (also while Redis is away:
        this process then fetches its own)."""
        names = list(domains)

        def loaded(raws: Any) -> None:
            for domain, raw in zip(names, raws or ()):
                if raw is not None:
                    data = json.loads(raw)
                    self.files[domain] = SharedRobotsFile(data["s"], data["b"].encode("latin-1"), data["f"], data["x"])
            done()

        self.link.submit(Op(send=lambda pipe: pipe.hmget(self.key, names), done=loaded))

    def put(self, domain: str, file: SharedRobotsFile) -> None:
        self.files[domain] = file
        data = json.dumps({"s": file.status, "b": file.body.decode("latin-1"), "f": file.fetched_at, "x": file.expires_at}, separators=(",", ":"))
        frontier = self.frontier
        self.link.submit(Op(send=lambda pipe: pipe.hset(self.key, domain, data)))
        # The domain's requests may be handed out now, by any process.
        self.link.submit(Op(send=lambda pipe: frontier.call("robots_stored", domain, repr(file.expires_at), client=pipe)))

"""robots.txt files shared by the processes of a crawl: fetched once, read by all."""

from __future__ import annotations

import json
from dataclasses import dataclass

from crawler.shared.store import SharedFrontier


@dataclass(frozen=True, slots=True)
class SharedRobotsFile:
    status: int | None
    body: bytes
    fetched_at: float
    expires_at: float


class SharedRobots:
    def __init__(self, frontier: SharedFrontier):
        self.frontier = frontier
        self.key = frontier.key("robots")

    def get(self, domain: str, now: float) -> SharedRobotsFile | None:
        raw = self.frontier.client.hget(self.key, domain)
        if raw is None:
            return None
        data = json.loads(raw)
        if data["x"] <= now:
            return None
        return SharedRobotsFile(data["s"], data["b"].encode("latin-1"), data["f"], data["x"])

    def put(self, domain: str, file: SharedRobotsFile) -> None:
        data = {"s": file.status, "b": file.body.decode("latin-1"), "f": file.fetched_at, "x": file.expires_at}
        self.frontier.client.hset(self.key, domain, json.dumps(data, separators=(",", ":")))
        # The domain's requests may be handed out now, by any process.
        self.frontier.robots_stored(domain, file.expires_at)

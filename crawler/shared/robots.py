"""robots.txt files shared by the processes of a crawl: fetched once, read by all."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from crawler.shared.connection import REDIS_ERRORS
from crawler.shared.store import SharedFrontier

logger = logging.getLogger(__name__)


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
        """The domain's file if some process stored it and it is still valid; None also while
        Redis is away (this process then fetches its own)."""
        try:
            raw = self.frontier.client.hget(self.key, domain)
        except REDIS_ERRORS:
            return None
        if raw is None:
            return None
        data = json.loads(raw)
        if data["x"] <= now:
            return None
        return SharedRobotsFile(data["s"], data["b"].encode("latin-1"), data["f"], data["x"])

    def put(self, domain: str, file: SharedRobotsFile) -> None:
        data = {"s": file.status, "b": file.body.decode("latin-1"), "f": file.fetched_at, "x": file.expires_at}
        try:
            self.frontier.client.hset(self.key, domain, json.dumps(data, separators=(",", ":")))
            # The domain's requests may be handed out now, by any process.
            self.frontier.robots_stored(domain, file.expires_at)
        except REDIS_ERRORS as exc:
            # The claim on the fetch expires and another fetch is made then.
            logger.warning("Could not share the robots.txt of %s (%s)", domain, exc)

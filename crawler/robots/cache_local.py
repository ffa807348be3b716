"""robots.txt files per domain in this process, with the time each stays valid; no I/O."""

from __future__ import annotations

from dataclasses import dataclass

from crawler.robots.rules import RobotsRules


@dataclass(slots=True)
class RobotsEntry:
    """A domain's robots.txt as fetched, and the rules read from it."""

    rules: RobotsRules
    status: int | None
    """HTTP status of the fetch, None when it failed before any answer."""
    body: bytes
    fetched_at: float
    expires_at: float


class RobotsCache:
    def __init__(self, ttl: float, retry_after: float):
        self.ttl = ttl
        self.retry_after = retry_after
        self.entries: dict[str, RobotsEntry] = {}

    def get(self, domain: str, now: float) -> RobotsEntry | None:
        entry = self.entries.get(domain)
        return entry if entry is not None and entry.expires_at > now else None

    def entry(self, rules: RobotsRules, status: int | None, body: bytes, now: float) -> RobotsEntry:
        """A file fetched ``now``: one that could not be read is tried again soon, a real answer
        is kept for the TTL."""
        temporary = status is None or status >= 500 or 300 <= status < 400
        return RobotsEntry(rules, status, body, now, now + (self.retry_after if temporary else self.ttl))

    def put(self, domain: str, entry: RobotsEntry) -> RobotsEntry:
        self.entries[domain] = entry
        return entry

    def forget(self, domain: str) -> None:
        self.entries.pop(domain, None)

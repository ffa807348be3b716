"""The crawl's storage: its backend and the rows other components hand to the pipeline.

The storage pipeline opens the backend; components that persist state (learned delays, robots
decisions, the request log, heartbeats) put rows in the outbox, which the pipeline writes with
its batches.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from crawler.storage.backend import Batch, StorageBackend


@dataclass(slots=True)
class Outbox:
    domains: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    """Latest learned pacing per domain, in ``DOMAIN_COLUMNS`` order."""
    robots: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    """Latest robots.txt fetch per domain, in ``ROBOTS_COLUMNS`` order."""
    robots_decisions: list[tuple[Any, ...]] = field(default_factory=list)
    """In ``ROBOTS_DECISION_COLUMNS`` order."""
    new_pages: list[tuple[Any, ...]] = field(default_factory=list)
    """Pages rows that must not replace an earlier row (URLs a job skipped)."""
    observed: Batch = field(default_factory=Batch)
    """What the crawl reports about itself (``workers``, ``stats_samples``, ``domain_state``,
    ``request_log``), in the column order of those tables."""

    def __len__(self) -> int:
        return (
            len(self.domains) + len(self.robots) + len(self.robots_decisions) + len(self.new_pages) + len(self.observed)
        )

    def drain_into(self, batch: Batch) -> None:
        """Move every row into ``batch``."""
        batch.domains.extend(self.domains.values())
        batch.robots.extend(self.robots.values())
        batch.robots_decisions.extend(self.robots_decisions)
        batch.new_pages.extend(self.new_pages)
        for kind in OBSERVED_KINDS:
            getattr(batch, kind).extend(getattr(self.observed, kind))
        self.domains, self.robots, self.robots_decisions, self.new_pages = {}, {}, [], []
        self.observed = Batch()


OBSERVED_KINDS = ("workers", "stats_samples", "domain_state", "request_log")


@dataclass(slots=True)
class CrawlStorage:
    backend: StorageBackend
    outbox: Outbox = field(default_factory=Outbox)
    opened: bool = False
    """Whether the pipeline has opened the backend (a job closed at start-up never does)."""
    flush: Callable[[], Awaitable[None]] | None = None
    """Write what is pending now (the pipeline's), for producers of many rows at once."""

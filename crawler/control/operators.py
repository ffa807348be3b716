"""What operators ask of running crawls, read from the database: domain controls (pause,
concurrency, minimum delay, reset), URLs in the inbox, a job's cancel flag."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from crawler.storage.values import as_datetime
from crawler.politeness.overrides import DomainControl, normal_pattern
from crawler.storage.backend import StorageBackend

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Controls:
    domains: dict[str, DomainControl] = field(default_factory=dict)
    """Pattern -> control."""
    resets: dict[str, datetime] = field(default_factory=dict)
    """Domain -> when an operator last asked to reset it."""


async def read_controls(backend: StorageBackend) -> Controls:
    rows = await backend.execute(
        "SELECT domain, paused, max_concurrency, min_delay, reset_requested_at FROM domain_controls"
    )
    controls = Controls()
    for domain, paused, concurrency, min_delay, reset_at in rows:
        try:
            pattern = normal_pattern(domain)
        except ValueError as exc:
            logger.debug("Ignoring a domain control: %s", exc)
            continue
        controls.domains[pattern] = DomainControl(
            int(concurrency) if concurrency else None, None if min_delay is None else float(min_delay), bool(paused)
        )
        if reset_at is not None:
            controls.resets[pattern] = as_datetime(reset_at)
    return controls


async def cancel_requested(backend: StorageBackend, job_id: str) -> bool:
    rows = await backend.execute("SELECT cancel_requested_at FROM crawl_jobs WHERE id = ?", (job_id,))
    return any(at is not None for (at,) in rows)


def take_sql(dialect: str) -> str:
    """Take up to N untaken URLs meant for this spider and crawl, each by one process only:
    PostgreSQL skips rows another process is taking; SQLite writes one statement at a time."""
    lock = " FOR UPDATE SKIP LOCKED" if dialect == "postgresql" else ""
    return (
        "UPDATE frontier_inbox SET taken_at = ?, taken_by = ? WHERE id IN ("
        "SELECT id FROM frontier_inbox WHERE taken_at IS NULL AND (spider IS NULL OR spider = ?) "
        f"AND (crawl_id IS NULL OR crawl_id = ?) ORDER BY id LIMIT ?{lock}) RETURNING id, url"
    )


async def take_inbox(
    backend: StorageBackend, *, now: datetime, worker: str, spider: str, crawl: str, limit: int
) -> list[str]:
    rows = await backend.execute(take_sql(backend.dialect), (now, worker, spider, crawl, limit))
    return [url for _, url in sorted(rows)]


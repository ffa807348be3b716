"""What the crawl recorded of itself, read back: the request log and robots.txt decisions of a
domain over a window (``scrapy audit``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from crawler.storage.backend import StorageBackend

REQUEST_LOG_AUDIT_COLUMNS = ("url", "started_at", "ended_at", "http_status", "outcome", "delay_in_force")
DECISION_AUDIT_COLUMNS = ("url", "allowed", "matched_rule")


async def logged_requests(
    backend: StorageBackend, domain: str, since: datetime | None = None, job: str | None = None
) -> list[dict[str, Any]]:
    """``request_log`` rows of ``domain`` started since ``since`` (of ``job``), as dicts."""
    where, params = _window(domain, since, job, "started_at")
    rows = await backend.execute(f"SELECT {', '.join(REQUEST_LOG_AUDIT_COLUMNS)} FROM request_log WHERE {where}", params)
    return [dict(zip(REQUEST_LOG_AUDIT_COLUMNS, row)) for row in rows]


async def robots_decisions(
    backend: StorageBackend, domain: str, since: datetime | None = None, job: str | None = None
) -> list[dict[str, Any]]:
    """``robots_decisions`` rows of ``domain`` decided since ``since`` (of ``job``), as dicts."""
    where, params = _window(domain, since, job, "decided_at")
    rows = await backend.execute(f"SELECT {', '.join(DECISION_AUDIT_COLUMNS)} FROM robots_decisions WHERE {where}", params)
    return [dict(zip(DECISION_AUDIT_COLUMNS, row)) for row in rows]


def _window(domain: str, since: datetime | None, job: str | None, time_column: str) -> tuple[str, tuple[Any, ...]]:
    where, params = ["domain = ?"], [domain]
    if since is not None:
        where.append(f"{time_column} >= ?")
        params.append(since)
    if job is not None:
        where.append("job_id = ?")
        params.append(job)
    return " AND ".join(where), tuple(params)

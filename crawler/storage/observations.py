"""What the crawl recorded of itself, read back: the crawl processes (``workers``) and their
stats samples, and the request log and robots.txt decisions of a domain over a window."""

from __future__ import annotations

import json
from collections.abc import Collection
from datetime import datetime
from typing import Any

from crawler.storage.backend import StorageBackend
from crawler.storage.schema import WORKER_COLUMNS
from crawler.storage.values import unix_time

DENIAL_COLUMNS = ("url", "allowed", "matched_rule", "reason", "decided_at")

REQUEST_LOG_AUDIT_COLUMNS = ("url", "started_at", "ended_at", "http_status", "outcome", "delay_in_force")
DECISION_AUDIT_COLUMNS = ("url", "allowed", "matched_rule")


async def logged_requests(
    backend: StorageBackend, domain: str, since: datetime | None = None, job: str | None = None
) -> list[dict[str, Any]]:
    """``request_log`` rows of ``domain`` started since ``since`` (of ``job``), as dicts."""
    return await _window(backend, "request_log", REQUEST_LOG_AUDIT_COLUMNS, "started_at", domain, since, job)


async def robots_decisions(
    backend: StorageBackend, domain: str, since: datetime | None = None, job: str | None = None
) -> list[dict[str, Any]]:
    """``robots_decisions`` rows of ``domain`` decided since ``since`` (of ``job``), as dicts."""
    return await _window(backend, "robots_decisions", DECISION_AUDIT_COLUMNS, "decided_at", domain, since, job)


async def _window(
    backend: StorageBackend,
    table: str,
    columns: tuple[str, ...],
    time_column: str,
    domain: str,
    since: datetime | None,
    job: str | None,
) -> list[dict[str, Any]]:
    """``columns`` of the rows of ``table`` of ``domain`` since ``since`` (of ``job``), as dicts."""
    where, params = ["domain = ?"], [domain]
    if since is not None:
        where.append(f"{time_column} >= ?")
        params.append(since)
    if job is not None:
        where.append("job_id = ?")
        params.append(job)
    sql = f"SELECT {', '.join(columns)} FROM {table} WHERE {' AND '.join(where)} ORDER BY {time_column}"
    rows = await backend.execute(sql, params)
    return [dict(zip(columns, row)) for row in rows]


def stats_of(text: Any) -> dict[str, Any]:
    """A ``stats`` JSON column; unreadable text counts as no stats rather than failing a page."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


async def workers(backend: StorageBackend, jobs: Collection[str] | None = None) -> list[dict[str, Any]]:
    """Every crawl process recorded (of ``jobs``), latest heartbeat first, its ``stats`` read as a dict."""
    if jobs is not None and not jobs:
        return []
    where = "" if jobs is None else f"WHERE job_id IN ({', '.join('?' * len(jobs))})"
    rows = await backend.dicts(
        f"SELECT {', '.join(WORKER_COLUMNS)} FROM workers {where} ORDER BY heartbeat_at DESC",
        WORKER_COLUMNS,
        tuple(jobs or ()),
    )
    for row in rows:
        row["stats"] = stats_of(row["stats"])
    return rows


async def stats_samples(backend: StorageBackend, since: datetime) -> list[tuple[str, float, dict[str, Any]]]:
    """(worker, Unix time, stats) of every sample since ``since``, oldest first."""
    rows = await backend.execute(
        "SELECT worker_id, sampled_at, stats FROM stats_samples WHERE sampled_at >= ? ORDER BY sampled_at", (since,)
    )
    return [(worker, unix_time(at) or 0.0, stats_of(stats)) for worker, at, stats in rows]


async def recent_denials(backend: StorageBackend, domain: str, limit: int) -> list[dict[str, Any]]:
    """The latest robots.txt refusals of ``domain``, as dicts of ``DENIAL_COLUMNS``."""
    sql = (
        f"SELECT {', '.join(DENIAL_COLUMNS)} FROM robots_decisions WHERE domain = ? AND NOT allowed "
        "ORDER BY decided_at DESC LIMIT ?"
    )
    return await backend.dicts(sql, DENIAL_COLUMNS, (domain, limit))

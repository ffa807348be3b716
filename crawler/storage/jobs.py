"""Jobs in ``crawl_jobs``: one row per run, from its start to its end, and an operator's cancel."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from crawler.storage.backend import StorageBackend

FETCHED_STATUSES = frozenset({"fetched", "noindex", "duplicate"})
"""Rows a job counts in ``pages_fetched`` (pages downloaded whole); ``pages_failed`` counts ``FAILED_STATUSES``."""
FAILED_STATUSES = frozenset({"error"})
PAGE_STATUS_STAT = "pages/status/"
"""The Scrapy stats of a job's rows by status (``pages/status/fetched``), as the pipeline counts them."""


@dataclass(slots=True)
class JobRecord:
    id: str
    spider: str
    seeds: str
    started_at: Any
    status: str = "running"


async def start_job(backend: StorageBackend, job: JobRecord) -> None:
    await backend.execute(
        "INSERT INTO crawl_jobs (id, spider, seeds, started_at, status) VALUES (?, ?, ?, ?, ?)",
        (job.id, job.spider, job.seeds, job.started_at, job.status),
    )


async def finish_job(
    backend: StorageBackend,
    job_id: str,
    *,
    finished_at: Any,
    status: str,
    reason: str,
    counters: dict[str, int],
    stats: str,
) -> None:
    await backend.execute(
        "UPDATE crawl_jobs SET finished_at = ?, status = ?, finish_reason = ?, pages_fetched = ?, "
        "pages_failed = ?, rows_written = ?, stats = ? WHERE id = ?",
        (
            finished_at,
            status,
            reason,
            counters.get("pages_fetched", 0),
            counters.get("pages_failed", 0),
            counters.get("rows_written", 0),
            stats,
            job_id,
        ),
    )


def pages_in_stats(stats: Mapping[str, float]) -> tuple[float, float]:
    """A job's pages fetched and failed from its process's stats: while it runs, what its
    ``crawl_jobs`` row will say when it ends."""
    return (
        sum(stats.get(PAGE_STATUS_STAT + status, 0.0) for status in FETCHED_STATUSES),
        sum(stats.get(PAGE_STATUS_STAT + status, 0.0) for status in FAILED_STATUSES),
    )


async def cancel_requested(backend: StorageBackend, job_id: str) -> bool:
    status = await job_status(backend, job_id)
    return status is not None and status[1] is not None


JOB_COLUMNS = (
    "id",
    "spider",
    "seeds",
    "started_at",
    "finished_at",
    "status",
    "finish_reason",
    "pages_fetched",
    "pages_failed",
    "rows_written",
    "cancel_requested_at",
)


async def list_jobs(backend: StorageBackend, limit: int, status: str | None = None) -> list[dict[str, Any]]:
    """Jobs newest first (of ``status``), as dicts of ``JOB_COLUMNS``."""
    where, values = ("WHERE status = ?", [status]) if status else ("", [])
    sql = f"SELECT {', '.join(JOB_COLUMNS)} FROM crawl_jobs {where} ORDER BY started_at DESC LIMIT ?"
    return await backend.dicts(sql, JOB_COLUMNS, (*values, limit))


async def job_status(backend: StorageBackend, job_id: str) -> tuple[str, Any] | None:
    """The job's status and when a cancel was asked (None: not yet), or None for no such job."""
    rows = await backend.execute("SELECT status, cancel_requested_at FROM crawl_jobs WHERE id = ?", (job_id,))
    return (rows[0][0], rows[0][1]) if rows else None


async def request_cancel(backend: StorageBackend, job_id: str, now: datetime) -> None:
    await backend.execute("UPDATE crawl_jobs SET cancel_requested_at = ? WHERE id = ?", (now, job_id))

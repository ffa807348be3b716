"""Jobs in ``crawl_jobs``: one row per run, from its start to its end, and an operator's cancel."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crawler.storage.backend import StorageBackend


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
    backend: StorageBackend, job_id: str, *, finished_at: Any, status: str, reason: str, counters: dict[str, int], stats: str
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


async def cancel_requested(backend: StorageBackend, job_id: str) -> bool:
    rows = await backend.execute("SELECT cancel_requested_at FROM crawl_jobs WHERE id = ?", (job_id,))
    return any(at is not None for (at,) in rows)

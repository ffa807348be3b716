"""What ``scrapy prune`` removes: rows the retention settings (``CRAWLER_RETAIN_*``) no longer
keep, deleted in bounded batches so that no statement holds its locks for long.

Tables with an integer ``id`` are walked by ranges of ids (one index range scan per batch, one
pass over the table); the rest (``crawl_jobs``, ``workers``) by ``LIMIT``ed batches of their own index.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from scrapy.settings import Settings

from crawler.storage.backend import StorageBackend

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    robots_decisions_days: float
    allowed_robots_decisions: bool
    jobs_days: float
    gone_visits: int
    bodies_days: float
    request_log_days: float
    stats_samples_days: float
    workers_days: float
    batch_size: int

    @classmethod
    def from_settings(cls, settings: Settings) -> RetentionPolicy:
        return cls(
            robots_decisions_days=settings.getfloat("CRAWLER_RETAIN_ROBOTS_DECISIONS_DAYS"),
            allowed_robots_decisions=settings.getbool("CRAWLER_RETAIN_ALLOWED_ROBOTS_DECISIONS"),
            jobs_days=settings.getfloat("CRAWLER_RETAIN_JOBS_DAYS"),
            gone_visits=settings.getint("CRAWLER_RETAIN_GONE_VISITS"),
            bodies_days=settings.getfloat("CRAWLER_RETAIN_BODIES_DAYS"),
            request_log_days=settings.getfloat("CRAWLER_RETAIN_REQUEST_LOG_DAYS"),
            stats_samples_days=settings.getfloat("CRAWLER_RETAIN_STATS_SAMPLES_DAYS"),
            workers_days=settings.getfloat("CRAWLER_RETAIN_WORKERS_DAYS"),
            batch_size=settings.getint("CRAWLER_PRUNE_BATCH_SIZE"),
        )


@dataclass(frozen=True, slots=True)
class Step:
    """One thing prune removes: ``statement`` (a DELETE or UPDATE of ``table`` ending in a
    WHERE clause) run over the whole table in batches."""

    name: str
    table: str
    statement: str
    params: tuple[Any, ...]


def steps(policy: RetentionPolicy, now: datetime) -> list[Step]:
    """What the policy removes at ``now``; a retention of 0 days (or visits) keeps for ever."""

    def before(days: float) -> datetime:
        return now - timedelta(days=days)

    found: list[Step] = []
    robots = []
    if not policy.allowed_robots_decisions:
        robots.append(("allowed = ?", (True,)))
    if policy.robots_decisions_days > 0:
        robots.append(("decided_at < ?", (before(policy.robots_decisions_days),)))
    if robots:
        condition = " OR ".join(sql for sql, _ in robots)
        params = tuple(p for _, values in robots for p in values)
        found.append(
            Step("robots decisions", "robots_decisions", f"DELETE FROM robots_decisions WHERE ({condition})", params)
        )
    if policy.gone_visits > 0:
        found.append(
            Step(
                "pages gone for good (404/410)",
                "pages",
                "DELETE FROM pages WHERE status = 'error' AND http_status IN (404, 410) AND error_count >= ?",
                (policy.gone_visits,),
            )
        )
    if policy.bodies_days > 0:
        found.append(
            Step(
                "bodies of old pages",
                "pages",
                "UPDATE pages SET body = NULL WHERE body IS NOT NULL AND crawled_at < ?",
                (before(policy.bodies_days),),
            )
        )
    if policy.request_log_days > 0:
        found.append(
            Step(
                "request log",
                "request_log",
                "DELETE FROM request_log WHERE started_at < ?",
                (before(policy.request_log_days),),
            )
        )
    if policy.stats_samples_days > 0:
        found.append(
            Step(
                "stats samples",
                "stats_samples",
                "DELETE FROM stats_samples WHERE sampled_at < ?",
                (before(policy.stats_samples_days),),
            )
        )
    return found


async def prune(backend: StorageBackend, policy: RetentionPolicy, now: datetime) -> dict[str, int]:
    """Apply the policy; rows removed (or bodies dropped) by step, then reclaim the space."""
    removed: dict[str, int] = {}
    touched: set[str] = set()
    for step in steps(policy, now):
        removed[step.name] = count = await _by_id_ranges(backend, step, policy.batch_size)
        logger.info("Pruned %s: %d rows", step.name, count)
        if count:
            touched.add(step.table)
    keyed = (
        ("finished jobs", "crawl_jobs", "id", "finished_at < ? AND status <> 'running'", policy.jobs_days),
        # A process silent that long has ended, however it ended (a killed one still says running).
        ("workers", "workers", "worker_id", "heartbeat_at < ?", policy.workers_days),
    )
    for name, table, key, condition, days in keyed:
        if days > 0:
            cutoff = now - timedelta(days=days)
            removed[name] = count = await _by_limited_batches(backend, table, key, condition, cutoff, policy.batch_size)
            if count:
                touched.add(table)
    await backend.vacuum(sorted(touched))
    return removed


async def _by_id_ranges(backend: StorageBackend, step: Step, batch_size: int) -> int:
    ((low, high),) = await backend.execute(f"SELECT MIN(id), MAX(id) FROM {step.table}")
    if low is None:
        return 0
    total = 0
    for start in range(low, high + 1, batch_size):
        total += await backend.execute_count(
            f"{step.statement} AND id >= ? AND id < ?", (*step.params, start, start + batch_size)
        )
    return total


async def _by_limited_batches(
    backend: StorageBackend, table: str, key: str, condition: str, cutoff: datetime, batch_size: int
) -> int:
    total = 0
    while True:
        count = await backend.execute_count(
            f"DELETE FROM {table} WHERE {key} IN (SELECT {key} FROM {table} WHERE {condition} LIMIT ?)",
            (cutoff, batch_size),
        )
        total += count
        if count < batch_size:
            return total

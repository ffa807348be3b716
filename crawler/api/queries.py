"""The SQL the API reads with, dialect-neutral (``?`` placeholders, timestamps as parameters)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from crawler.api.database import Database, epoch, stats_of
from crawler.api.figures import Sample, numeric

WORKER_COLUMNS = ("worker_id", "job_id", "crawl_id", "spider", "hostname", "pid", "started_at", "heartbeat_at", "state", "stats")

DOMAIN_COLUMNS = (
    "domain", "effective_delay", "robots_delay", "learned_delay", "learned_floor", "blocked_until", "circuit",
    "in_flight", "queued", "pages", "errors", "responses_429", "updated_at",
    "paused", "max_concurrency", "min_delay", "reset_requested_at",
)  # fmt: skip
# A domain crawled before snapshots were kept still shows its stored robots and learned delays.
_DOMAIN_SELECT = """
SELECT names.domain,
       ds.effective_delay, COALESCE(ds.robots_delay, d.crawl_delay_seconds),
       COALESCE(ds.learned_delay, d.adaptive_delay_seconds), COALESCE(ds.learned_floor, d.adaptive_delay_floor_seconds),
       ds.blocked_until, ds.circuit, COALESCE(ds.in_flight, 0), COALESCE(ds.queued, 0), COALESCE(ds.pages, d.page_count, 0),
       COALESCE(ds.errors, 0), COALESCE(ds.responses_429, 0), ds.updated_at,
       COALESCE(dc.paused, FALSE), dc.max_concurrency, dc.min_delay, dc.reset_requested_at
FROM (SELECT domain FROM domain_state UNION SELECT domain FROM domains) names
LEFT JOIN domain_state ds ON ds.domain = names.domain
LEFT JOIN domains d ON d.domain = names.domain
LEFT JOIN domain_controls dc ON dc.domain = names.domain
"""
DOMAIN_SORTS = {
    "domain": "names.domain",
    "delay": "COALESCE(ds.effective_delay, d.crawl_delay_seconds, 0)",
    "learned_delay": "COALESCE(ds.learned_delay, d.adaptive_delay_seconds, 0)",
    "queued": "COALESCE(ds.queued, 0)",
    "in_flight": "COALESCE(ds.in_flight, 0)",
    "pages": "COALESCE(ds.pages, d.page_count, 0)",
    "errors": "COALESCE(ds.errors, 0)",
    "responses_429": "COALESCE(ds.responses_429, 0)",
}

PAGE_COLUMNS = (
    "id", "url", "domain", "status", "http_status", "content_type", "content_length", "title", "error",
    "crawled_at", "crawl_duration_ms", "depth", "discovered_via", "job_id",
)  # fmt: skip
JOB_COLUMNS = (
    "id", "spider", "seeds", "started_at", "finished_at", "status", "finish_reason",
    "pages_fetched", "pages_failed", "rows_written", "cancel_requested_at",
)  # fmt: skip
CONTROL_COLUMNS = ("domain", "paused", "max_concurrency", "min_delay", "reset_requested_at", "updated_by", "updated_at")
ROBOTS_COLUMNS = ("domain", "robots_txt", "robots_status", "robots_fetched_at", "robots_expires_at", "crawl_delay_seconds", "is_allowed")
DECISION_COLUMNS = ("url", "allowed", "matched_rule", "reason", "decided_at")
REQUEST_LOG_COLUMNS = ("id", "domain", "url", "job_id", "worker_id", "started_at", "ended_at", "http_status", "outcome", "delay_in_force")
INBOX_COLUMNS = ("id", "url", "spider", "crawl_id", "added_by", "added_at", "taken_at", "taken_by")


async def workers(db: Database) -> list[dict[str, Any]]:
    rows = await db.rows(f"SELECT {', '.join(WORKER_COLUMNS)} FROM workers ORDER BY heartbeat_at DESC", WORKER_COLUMNS)
    for row in rows:
        row["stats"] = numeric(stats_of(row["stats"]))
    return rows


async def samples(db: Database, since: datetime) -> list[Sample]:
    rows = await db.raw("SELECT worker_id, sampled_at, stats FROM stats_samples WHERE sampled_at >= ? ORDER BY sampled_at", (since,))
    return [Sample(worker, epoch(at) or 0.0, numeric(stats_of(stats))) for worker, at, stats in rows]


async def domains(db: Database, sort: str, descending: bool, limit: int, offset: int, search: str | None) -> tuple[int, list[dict[str, Any]]]:
    where, params = ("WHERE names.domain LIKE ?", [f"%{search}%"]) if search else ("", [])
    order = f"{DOMAIN_SORTS[sort]} {'DESC' if descending else 'ASC'}, names.domain"
    rows = await db.rows(f"{_DOMAIN_SELECT} {where} ORDER BY {order} LIMIT ? OFFSET ?", DOMAIN_COLUMNS, (*params, limit, offset))
    total = await db.scalar(f"SELECT COUNT(*) FROM (SELECT domain FROM domain_state UNION SELECT domain FROM domains) names {where}", params)
    return int(total or 0), rows


async def domain_totals(db: Database, now: datetime) -> dict[str, Any]:
    row = (await db.raw(
        "SELECT COUNT(*), COALESCE(SUM(queued), 0), COALESCE(SUM(in_flight), 0), "
        "COALESCE(SUM(CASE WHEN blocked_until > ? THEN 1 ELSE 0 END), 0), "
        "COALESCE(SUM(CASE WHEN circuit = 'open' THEN 1 ELSE 0 END), 0) FROM domain_state",
        (now,),
    ))[0]  # fmt: skip
    return dict(zip(("domains", "queued", "in_flight", "blocked", "circuits_open"), (int(v) for v in row)))


async def busiest_domains(db: Database, limit: int) -> list[dict[str, Any]]:
    return await db.rows(
        f"{_DOMAIN_SELECT} WHERE ds.domain IS NOT NULL ORDER BY COALESCE(ds.pages, 0) DESC, names.domain LIMIT ?",
        DOMAIN_COLUMNS, (limit,),
    )  # fmt: skip


async def learned_delays(db: Database) -> list[float]:
    return [float(v) for (v,) in await db.raw("SELECT learned_delay FROM domain_state WHERE learned_delay IS NOT NULL")]


async def pages(
    db: Database, *, limit: int, after: tuple[datetime, int] | None, domain: str | None, status: str | None,
    since: datetime | None, until: datetime | None,
) -> list[dict[str, Any]]:
    """Newest first, by (crawled_at, id): a keyset page, which an index answers at any depth."""
    conditions, params = [], []
    for column, value in (("domain", domain), ("status", status)):
        if value is not None:
            conditions.append(f"{column} = ?")
            params.append(value)
    if since is not None:
        conditions.append("crawled_at >= ?")
        params.append(since)
    if until is not None:
        conditions.append("crawled_at < ?")
        params.append(until)
    if after is not None:
        moment, row_id = after
        conditions.append("(crawled_at < ? OR (crawled_at = ? AND id < ?))")
        params += [moment, moment, row_id]
    where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
    sql = f"SELECT {', '.join(PAGE_COLUMNS)} FROM pages {where} ORDER BY crawled_at DESC, id DESC LIMIT ?"
    return await db.rows(sql, PAGE_COLUMNS, (*params, limit))

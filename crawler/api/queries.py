"""The SQL the API reads with, dialect-neutral (``?`` placeholders, timestamps as parameters)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from crawler.api.database import Database, stats_of
from crawler.storage.values import unix_time
from crawler.api.figures import Sample, numeric

WORKER_COLUMNS = ("worker_id", "job_id", "crawl_id", "spider", "hostname", "pid", "started_at", "heartbeat_at", "state", "stats")

DOMAIN_COLUMNS = (
    "domain", "effective_delay", "robots_delay", "learned_delay", "learned_floor", "blocked_until", "circuit",
    "in_flight", "queued", "pages", "errors", "responses_429", "updated_at",
    "paused", "max_concurrency", "min_delay", "reset_requested_at",
)  # fmt: skip
# A page of the crawl processes' snapshots is chosen in domain_state alone (one scan, a top-N
# sort) and only its rows are joined with the stored robots.txt delays and the controls; the
# domains known only from the domains table (crawled before snapshots were kept) follow them.
_STATE_PAGE = """
SELECT ds.domain, ds.effective_delay, COALESCE(ds.robots_delay, d.crawl_delay_seconds),
       COALESCE(ds.learned_delay, d.adaptive_delay_seconds), COALESCE(ds.learned_floor, d.adaptive_delay_floor_seconds),
       ds.blocked_until, ds.circuit, ds.in_flight, ds.queued, ds.pages, ds.errors, ds.responses_429, ds.updated_at,
       COALESCE(dc.paused, FALSE), dc.max_concurrency, dc.min_delay, dc.reset_requested_at
FROM (SELECT * FROM domain_state ds {where} ORDER BY {order} LIMIT ? OFFSET ?) ds
LEFT JOIN domains d ON d.domain = ds.domain
LEFT JOIN domain_controls dc ON dc.domain = ds.domain
ORDER BY {order}
"""
_STORED_ONLY = "FROM domains d WHERE NOT EXISTS (SELECT 1 FROM domain_state s WHERE s.domain = d.domain) {where}"
_STORED_PAGE = f"""
SELECT d.domain, NULL, d.crawl_delay_seconds, d.adaptive_delay_seconds, d.adaptive_delay_floor_seconds, NULL, NULL,
       0, 0, COALESCE(d.page_count, 0), 0, 0, d.updated_at,
       COALESCE(dc.paused, FALSE), dc.max_concurrency, dc.min_delay, dc.reset_requested_at
{_STORED_ONLY.replace("FROM domains d", "FROM domains d LEFT JOIN domain_controls dc ON dc.domain = d.domain")}
ORDER BY d.domain LIMIT ? OFFSET ?
"""
# Plain columns (NOT NULL in domain_state): a sort on an expression cost twice as much.
DOMAIN_SORTS = {
    "domain": "ds.domain",
    "delay": "ds.effective_delay",
    "learned_delay": "ds.learned_delay",
    "queued": "ds.queued",
    "in_flight": "ds.in_flight",
    "pages": "ds.pages",
    "errors": "ds.errors",
    "responses_429": "ds.responses_429",
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
    return [Sample(worker, unix_time(at) or 0.0, numeric(stats_of(stats))) for worker, at, stats in rows]


class StoredOnlyCount:
    """How many domains are known only from the domains table, recounted at most every
    ``seconds``: the anti-join costs more than the page itself, and these domains (crawled
    before snapshots were kept) change rarely."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic):
        self.seconds = seconds
        self.clock = clock
        self._value: tuple[float, int] | None = None

    async def get(self, db: Database) -> int:
        now = self.clock()
        if self._value is None or now - self._value[0] >= self.seconds:
            self._value = (now, int(await db.scalar(f"SELECT COUNT(*) {_STORED_ONLY.format(where='')}") or 0))
        return self._value[1]


async def domains(
    db: Database, sort: str, descending: bool, limit: int, offset: int, search: str | None, stored_only: StoredOnlyCount
) -> tuple[int, list[dict[str, Any]]]:
    """A page of domains sorted by ``sort`` (those with a snapshot), then those known only
    from the domains table by name; and how many there are in all."""
    params: list[Any] = [f"%{search}%"] if search else []
    if search:
        counts = await db.raw(
            f"SELECT (SELECT COUNT(*) FROM domain_state ds WHERE ds.domain LIKE ?), (SELECT COUNT(*) {_STORED_ONLY.format(where='AND d.domain LIKE ?')})",
            params * 2,
        )  # fmt: skip
        in_state, stored = (int(n or 0) for n in counts[0])
    else:
        in_state, stored = int(await db.scalar("SELECT COUNT(*) FROM domain_state") or 0), await stored_only.get(db)
    order = f"{DOMAIN_SORTS[sort]} {'DESC' if descending else 'ASC'}, ds.domain"
    rows = []
    if offset < in_state:
        sql = _STATE_PAGE.format(where="WHERE ds.domain LIKE ?" if search else "", order=order)
        rows = await db.rows(sql, DOMAIN_COLUMNS, (*params, limit, offset))
    if len(rows) < limit and stored:
        sql = _STORED_PAGE.format(where="AND d.domain LIKE ?" if search else "")
        rows += await db.rows(sql, DOMAIN_COLUMNS, (*params, limit - len(rows), max(0, offset - in_state)))
    return in_state + stored, rows


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
        _STATE_PAGE.format(where="", order="ds.pages DESC, ds.domain"), DOMAIN_COLUMNS, (limit, 0),
    )  # fmt: skip


async def learned_delays(db: Database) -> list[float]:
    return [float(v) for (v,) in await db.raw("SELECT learned_delay FROM domain_state WHERE learned_delay IS NOT NULL")]


def page_filters(
    *, domain: str | None = None, status: str | None = None, since: datetime | None = None, until: datetime | None = None
) -> tuple[list[str], list[Any]]:
    """Conditions on ``pages`` (ANDed) and their parameters."""
    conditions, params = [], []
    for condition, value in (("domain = ?", domain), ("status = ?", status), ("crawled_at >= ?", since), ("crawled_at < ?", until)):
        if value is not None:
            conditions.append(condition)
            params.append(value)
    return conditions, params


async def pages(
    db: Database, *, limit: int, after: tuple[datetime, int] | None, domain: str | None, status: str | None,
    since: datetime | None, until: datetime | None,
) -> list[dict[str, Any]]:
    """Newest first, by (crawled_at, id): a keyset page, which an index answers at any depth."""
    conditions, params = page_filters(domain=domain, status=status, since=since, until=until)
    if after is not None:
        moment, row_id = after
        conditions.append("(crawled_at < ? OR (crawled_at = ? AND id < ?))")
        params += [moment, moment, row_id]
    where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
    sql = f"SELECT {', '.join(PAGE_COLUMNS)} FROM pages {where} ORDER BY crawled_at DESC, id DESC LIMIT ?"
    return await db.rows(sql, PAGE_COLUMNS, (*params, limit))

"""What the database keeps of domains: learned pacing and robots.txt files between jobs, and the
crawl processes' snapshots of each domain's state (``domain_state``) as the dashboard lists them."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from crawler.storage.backend import StorageBackend
from crawler.storage.schema import DOMAIN_STATE_COLUMNS, ROBOTS_COLUMNS


async def learned_delays(backend: StorageBackend) -> list[tuple[str, float, float]]:
    """Domains that learned a delay or a floor: (domain, delay, floor)."""
    rows = await backend.execute(
        "SELECT domain, adaptive_delay_seconds, adaptive_delay_floor_seconds FROM domains "
        "WHERE adaptive_delay_seconds > 0 OR adaptive_delay_floor_seconds > 0"
    )
    return [(domain, float(delay), float(floor)) for domain, delay, floor in rows]


async def valid_robots_files(backend: StorageBackend, now: datetime) -> list[tuple[Any, ...]]:
    """robots.txt files stored by earlier jobs that are still valid at ``now``: (domain, text,
    status, fetched at, expires at)."""
    return await backend.execute(
        "SELECT domain, robots_txt, robots_status, robots_fetched_at, robots_expires_at FROM domains "
        "WHERE robots_status IS NOT NULL AND robots_expires_at > ?",
        (now,),
    )


DOMAIN_TABLES = frozenset({"pages", "request_log"})
"""Tables whose ``domain`` column ``domains_starting_with`` reads."""


async def domains_starting_with(backend: StorageBackend, table: str, prefix: str) -> list[str]:
    """The distinct domains of ``table`` (one of ``DOMAIN_TABLES``) that start with ``prefix``."""
    assert table in DOMAIN_TABLES, table
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    rows = await backend.execute(
        f"SELECT DISTINCT domain FROM {table} WHERE domain LIKE ? ESCAPE '\\'", (escaped + "%",)
    )
    return [domain for (domain,) in rows]


ROBOTS_FILE_COLUMNS = tuple(column for column in ROBOTS_COLUMNS if column != "updated_at")


async def robots_file(backend: StorageBackend, domain: str) -> dict[str, Any] | None:
    """The stored robots.txt of ``domain``, as a dict of ``ROBOTS_FILE_COLUMNS``, or None."""
    sql = f"SELECT {', '.join(ROBOTS_FILE_COLUMNS)} FROM domains WHERE domain = ?"
    rows = await backend.dicts(sql, ROBOTS_FILE_COLUMNS, (domain,))
    return rows[0] if rows else None


DOMAIN_COLUMNS = (*DOMAIN_STATE_COLUMNS, "paused", "max_concurrency", "min_delay", "reset_requested_at")
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


class StoredOnlyCount:
    """How many domains are known only from the domains table, recounted at most every
    ``seconds``: the anti-join costs more than the page itself, and these domains (crawled
    before snapshots were kept) change rarely."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic):
        self.seconds = seconds
        self.clock = clock
        self._value: tuple[float, int] | None = None

    async def get(self, backend: StorageBackend) -> int:
        now = self.clock()
        if self._value is None or now - self._value[0] >= self.seconds:
            self._value = (now, int(await backend.scalar(f"SELECT COUNT(*) {_STORED_ONLY.format(where='')}") or 0))
        return self._value[1]


async def domains_page(
    backend: StorageBackend,
    sort: str,
    descending: bool,
    limit: int,
    offset: int,
    search: str | None,
    stored_only: StoredOnlyCount,
) -> tuple[int, list[dict[str, Any]]]:
    """A page of domains sorted by ``sort`` (those with a snapshot), then those known only
    from the domains table by name; and how many there are in all."""
    params: list[Any] = [f"%{search}%"] if search else []
    if search:
        counts = await backend.execute(
            f"SELECT (SELECT COUNT(*) FROM domain_state ds WHERE ds.domain LIKE ?), (SELECT COUNT(*) {_STORED_ONLY.format(where='AND d.domain LIKE ?')})",
            params * 2,
        )
        in_state, stored = (int(n or 0) for n in counts[0])
    else:
        in_state, stored = (
            int(await backend.scalar("SELECT COUNT(*) FROM domain_state") or 0),
            await stored_only.get(backend),
        )
    order = f"{DOMAIN_SORTS[sort]} {'DESC' if descending else 'ASC'}, ds.domain"
    rows = []
    if offset < in_state:
        sql = _STATE_PAGE.format(where="WHERE ds.domain LIKE ?" if search else "", order=order)
        rows = await backend.dicts(sql, DOMAIN_COLUMNS, (*params, limit, offset))
    if len(rows) < limit and stored:
        sql = _STORED_PAGE.format(where="AND d.domain LIKE ?" if search else "")
        rows += await backend.dicts(sql, DOMAIN_COLUMNS, (*params, limit - len(rows), max(0, offset - in_state)))
    return in_state + stored, rows


async def domain_totals(backend: StorageBackend, now: datetime) -> dict[str, Any]:
    """Domains with a snapshot; their queued and in-flight requests; how many are blocked at
    ``now`` and how many circuits are open."""
    row = (
        await backend.execute(
            "SELECT COUNT(*), COALESCE(SUM(queued), 0), COALESCE(SUM(in_flight), 0), "
            "COALESCE(SUM(CASE WHEN blocked_until > ? THEN 1 ELSE 0 END), 0), "
            "COALESCE(SUM(CASE WHEN circuit = 'open' THEN 1 ELSE 0 END), 0) FROM domain_state",
            (now,),
        )
    )[0]
    return dict(zip(("domains", "queued", "in_flight", "blocked", "circuits_open"), (int(v) for v in row)))


async def busiest_domains(backend: StorageBackend, limit: int) -> list[dict[str, Any]]:
    """The ``limit`` domains with the most pages, as ``domains_page`` lists them."""
    return await backend.dicts(
        _STATE_PAGE.format(where="", order="ds.pages DESC, ds.domain"), DOMAIN_COLUMNS, (limit, 0)
    )


async def current_learned_delays(backend: StorageBackend) -> list[float]:
    """The learned delay of every domain with a snapshot."""
    return [
        float(v)
        for (v,) in await backend.execute("SELECT learned_delay FROM domain_state WHERE learned_delay IS NOT NULL")
    ]

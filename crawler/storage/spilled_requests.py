"""Requests of cold domains kept in ``frontier_spill`` rather than in Redis (PostgreSQL only:
``crawler.frontier.spill`` moves them). Each row carries its frontier shard's run, so that a new
run of the crawl never reads an earlier run's rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crawler.storage.backend import StorageBackend

SpilledRow = tuple[int, int, str]
"""A row's id, the request's priority and the encoded request."""


async def write_spilled(
    backend: StorageBackend, crawl: str, run: str, domain: str, entries: Sequence[tuple[int, str]]
) -> list[SpilledRow]:
    """Write the (priority, request) entries of ``domain`` in one statement; the rows written."""
    rows = await backend.execute(
        "INSERT INTO frontier_spill (crawl_id, run, domain, priority, request) "
        "SELECT ?, ?, ?, entry.priority, entry.request "
        "FROM unnest(?::integer[], ?::text[]) AS entry (priority, request) RETURNING id, priority, request",
        (crawl, run, domain, [priority for priority, _ in entries], [request for _, request in entries]),
    )
    return [(int(row_id), int(priority), request) for row_id, priority, request in rows]


async def read_spilled(backend: StorageBackend, run: str, domain: str, limit: int) -> list[SpilledRow]:
    """The first ``limit`` rows of ``domain`` in ``run``: highest priority first, then oldest."""
    rows = await backend.execute(
        "SELECT id, priority, request FROM frontier_spill WHERE run = ? AND domain = ? "
        "ORDER BY priority DESC, id LIMIT ?",
        (run, domain, limit),
    )
    return [(int(row_id), int(priority), request) for row_id, priority, request in rows]


async def delete_spilled(backend: StorageBackend, ids: Sequence[int]) -> None:
    if ids:
        await backend.execute("DELETE FROM frontier_spill WHERE id = ANY(?)", (list(ids),))


async def forget_other_runs(backend: StorageBackend, crawl: str, runs: Sequence[str]) -> int:
    """Delete the rows of ``crawl`` that no run in ``runs`` reads (an earlier run's: the crawl
    completed, was reclaimed or flushed); how many."""
    return await backend.execute_count(
        "DELETE FROM frontier_spill WHERE crawl_id = ? AND run <> ALL(?)", (crawl, list(runs))
    )


async def forget_crawl(backend: StorageBackend, crawl: str) -> int:
    """Delete every row of ``crawl`` (its frontier cleared); how many."""
    return await backend.execute_count("DELETE FROM frontier_spill WHERE crawl_id = ?", (crawl,))


async def spilled_urls(backend: StorageBackend, crawl: str | None, limit: int, offset: int) -> list[dict[str, Any]]:
    """The requests spilled by ``crawl`` (every crawl if None), as the API lists queued URLs, in
    the order they were spilled (the primary key's: no sort of the whole table per page)."""
    where, arguments = ("WHERE crawl_id = ? ", [crawl]) if crawl is not None else ("", [])
    rows = await backend.execute(
        f"SELECT crawl_id, domain, priority, request FROM frontier_spill {where}ORDER BY id LIMIT ? OFFSET ?",
        (*arguments, limit, offset),
    )
    return [
        {
            "crawl": crawl_id,
            "domain": domain,
            "priority": int(priority),
            "url": request.split("\t", 1)[0],
            "spilled": True,
        }
        for crawl_id, domain, priority, request in rows
    ]

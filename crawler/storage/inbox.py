"""URLs waiting for a crawl in ``frontier_inbox``, each taken by one process."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from crawler.storage.backend import StorageBackend


def _take_sql(dialect: str) -> str:
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
    """Up to ``limit`` URLs for ``spider`` and ``crawl``, taken by ``worker``, oldest first."""
    rows = await backend.execute(_take_sql(backend.dialect), (now, worker, spider, crawl, limit))
    return [url for _, url in sorted(rows)]


async def give_back_to_inbox(backend: StorageBackend, worker: str, urls: list[str]) -> int:
    """Untake ``urls`` that ``worker`` took and could not schedule; how many."""
    if not urls:
        return 0
    marks = ", ".join("?" * len(urls))
    return await backend.execute_count(
        f"UPDATE frontier_inbox SET taken_at = NULL, taken_by = NULL WHERE taken_by = ? AND url IN ({marks})",
        (worker, *urls),
    )


async def add_to_inbox(
    backend: StorageBackend, url: str, spider: str | None, crawl: str | None, who: str, now: datetime
) -> None:
    await backend.execute(
        "INSERT INTO frontier_inbox (url, spider, crawl_id, added_by, added_at) VALUES (?, ?, ?, ?, ?)",
        (url, spider, crawl, who, now),
    )


async def inbox_summary(backend: StorageBackend) -> tuple[int, Any, int]:
    """URLs waiting in the inbox, when the oldest was added, and rows of URLs a job left unfetched."""
    pending, oldest, skipped = (
        await backend.execute(  # one round trip
            "SELECT COUNT(*), MIN(added_at), (SELECT COUNT(*) FROM pages WHERE status = 'skipped') "
            "FROM frontier_inbox WHERE taken_at IS NULL"
        )
    )[0]
    return int(pending), oldest, int(skipped or 0)


async def waiting_urls(backend: StorageBackend, limit: int, offset: int) -> list[dict[str, Any]]:
    """URLs waiting without Redis: seeded and not yet taken, then those a job left unfetched,
    oldest first, as dicts of url, state and since."""
    return await backend.dicts(
        "SELECT url, 'inbox', added_at FROM frontier_inbox WHERE taken_at IS NULL "
        "UNION ALL SELECT url, status, crawled_at FROM pages WHERE status = 'skipped' "
        "ORDER BY 3, 1 LIMIT ? OFFSET ?",
        ("url", "state", "since"),
        (limit, offset),
    )


async def recover_inbox(backend: StorageBackend, stale_before: datetime) -> int:
    """Give back to the inbox the URLs taken by processes whose last heartbeat is older than
    ``stale_before`` (dead) and that have no row yet; how many."""
    return await backend.execute_count(
        "UPDATE frontier_inbox SET taken_at = NULL, taken_by = NULL WHERE taken_at IS NOT NULL AND NOT EXISTS "
        "(SELECT 1 FROM workers w WHERE w.worker_id = frontier_inbox.taken_by AND w.heartbeat_at >= ? "
        "AND w.state IN ('running', 'paused')) "
        "AND NOT EXISTS (SELECT 1 FROM pages p WHERE p.url = frontier_inbox.url)",
        (stale_before,),
    )


async def clear_inbox(backend: StorageBackend) -> int:
    """Drop the URLs waiting in the inbox; how many."""
    return await backend.execute_count("DELETE FROM frontier_inbox WHERE taken_at IS NULL")

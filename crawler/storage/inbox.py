"""URLs waiting for a crawl in ``frontier_inbox``, each taken by one process."""

from __future__ import annotations

from datetime import datetime

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

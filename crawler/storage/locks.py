"""The lock of a crawl in ``crawl_locks``: one run at a time, taken over from a holder whose
heartbeat is older than the stale time."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from crawler.storage.backend import StorageBackend

_TAKE = (
    "INSERT INTO crawl_locks (crawl_id, holder, hostname, pid, acquired_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (crawl_id) DO UPDATE SET holder = excluded.holder, hostname = excluded.hostname, pid = excluded.pid, "
    "acquired_at = excluded.acquired_at, heartbeat_at = excluded.heartbeat_at "
    "WHERE crawl_locks.heartbeat_at < ? RETURNING holder"
)


async def take_lock(
    backend: StorageBackend, crawl: str, holder: str, hostname: str, pid: int, now: datetime, stale_before: datetime
) -> bool:
    """Whether ``holder`` now holds the crawl's lock: it was free, or its holder's heartbeat is
    older than ``stale_before``."""
    return bool(await backend.execute(_TAKE, (crawl, holder, hostname, pid, now, now, stale_before)))


async def lock_holders(backend: StorageBackend, crawl: str) -> list[tuple[Any, ...]]:
    """(holder, hostname, pid, heartbeat) of the crawl's lock."""
    return await backend.execute(
        "SELECT holder, hostname, pid, heartbeat_at FROM crawl_locks WHERE crawl_id = ?", (crawl,)
    )


async def renew_lock(backend: StorageBackend, crawl: str, holder: str, now: datetime) -> None:
    await backend.execute(
        "UPDATE crawl_locks SET heartbeat_at = ? WHERE crawl_id = ? AND holder = ?", (now, crawl, holder)
    )


async def release_lock(backend: StorageBackend, crawl: str, holder: str) -> None:
    await backend.execute("DELETE FROM crawl_locks WHERE crawl_id = ? AND holder = ?", (crawl, holder))

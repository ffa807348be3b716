"""What operators ask of running crawls, as the database holds it: ``domain_controls``; and the
record of what admins did, ``admin_actions``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from crawler.storage.backend import StorageBackend


async def domain_controls(backend: StorageBackend) -> list[tuple[Any, ...]]:
    """(pattern, paused, max concurrency, min delay, reset requested at) of every control."""
    return await backend.execute(
        "SELECT domain, paused, max_concurrency, min_delay, reset_requested_at FROM domain_controls"
    )


CONTROL_COLUMNS = ("domain", "paused", "max_concurrency", "min_delay", "reset_requested_at", "updated_by", "updated_at")
ACTION_COLUMNS = ("id", "username", "action", "target", "detail", "acted_at")


async def set_control(backend: StorageBackend, domain: str, who: str, now: datetime, **values: Any) -> dict[str, Any]:
    """Upsert the domain's control row with ``values``; the other columns keep theirs. The row
    after, as a dict of ``CONTROL_COLUMNS``."""
    inserted = {"paused": False, **values}
    names = [*inserted, "updated_by", "updated_at"]
    updates = ", ".join(f"{c} = excluded.{c}" for c in [*values, "updated_by", "updated_at"])
    await backend.execute(
        f"INSERT INTO domain_controls (domain, {', '.join(names)}) VALUES (?, {', '.join('?' * len(names))}) "
        f"ON CONFLICT (domain) DO UPDATE SET {updates}",
        (domain, *inserted.values(), who, now),
    )
    rows = await backend.dicts(
        f"SELECT {', '.join(CONTROL_COLUMNS)} FROM domain_controls WHERE domain = ?", CONTROL_COLUMNS, (domain,)
    )
    return rows[0]


async def crawl_paused(backend: StorageBackend) -> bool:
    """Whether an operator paused the whole crawl (the domain ``*``)."""
    return bool(await backend.scalar("SELECT paused FROM domain_controls WHERE domain = '*'"))


async def record_action(
    backend: StorageBackend, username: str, action: str, target: str | None, detail: str | None, now: datetime
) -> None:
    """An admin action in ``admin_actions``: who, what, on what (``detail`` as JSON), when."""
    await backend.execute(
        "INSERT INTO admin_actions (username, action, target, detail, acted_at) VALUES (?, ?, ?, ?, ?)",
        (username, action, target, detail, now),
    )


async def admin_actions(backend: StorageBackend, limit: int) -> list[dict[str, Any]]:
    """The latest admin actions, newest first, as dicts of ``ACTION_COLUMNS``."""
    return await backend.dicts(
        f"SELECT {', '.join(ACTION_COLUMNS)} FROM admin_actions ORDER BY id DESC LIMIT ?", ACTION_COLUMNS, (limit,)
    )

"""The API's side of the database: the project's storage backend (psycopg's async pool, or
SQLite in its one thread) and rows as JSON-ready dicts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from crawler.storage import StorageBackend, open_backend
from crawler.storage.values import json_value


def utc_now() -> datetime:
    return datetime.now(UTC)


def stats_of(text: Any) -> dict[str, Any]:
    """A ``stats`` JSON column; unreadable text counts as no stats rather than failing a page."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class Database:
    def __init__(self, backend: StorageBackend):
        self.backend = backend

    @classmethod
    async def open(cls, database_url: str) -> Database:
        backend = open_backend(database_url)
        await backend.open()
        return cls(backend)

    async def close(self) -> None:
        await self.backend.close()

    @property
    def dialect(self) -> str:
        return self.backend.dialect

    async def rows(self, sql: str, columns: Sequence[str], params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """``sql`` selects ``columns`` in that order; rows as dicts of JSON values."""
        return [{c: json_value(v) for c, v in zip(columns, row)} for row in await self.backend.execute(sql, params)]

    async def raw(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return await self.backend.execute(sql, params)

    async def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        result = await self.backend.execute(sql, params)
        return result[0][0] if result else None

    async def ping(self) -> None:
        await self.backend.execute("SELECT 1")

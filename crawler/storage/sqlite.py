"""The embedded backend: one SQLite file, written from one worker thread off the reactor."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from crawler.storage.backend import Batch, StorageBackend, StorageRefused, StorageUnavailable
from crawler.storage.schema import migration_statements, write_statements

T = TypeVar("T")

_WRITE = write_statements("?")
PAGE_SIZE = 16384
"""Bytes of a page of a new SQLite file (SQLite's default is 4,096)."""


def _sqlite_value(value: Any) -> Any:
    # Timestamps are stored as ISO 8601 text (UTC), which sorts and compares correctly.
    return value.isoformat() if isinstance(value, datetime) else value


def _sqlite_row(row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(_sqlite_value(v) for v in row)


class SqliteBackend(StorageBackend):
    dialect = "sqlite"

    def __init__(self, database_url: str):
        path = database_url.partition("://")[2]
        # sqlite:///relative.db and sqlite:////absolute.db, as SQLAlchemy reads them.
        self.path = Path(path[1:] if path.startswith("/") else path)
        self.target = str(self.path.resolve())
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite")
        self._connection: sqlite3.Connection | None = None

    async def _run(self, function: Callable[[sqlite3.Connection], T]) -> T:
        def call() -> T:
            assert self._connection is not None
            try:
                return function(self._connection)
            except sqlite3.OperationalError as exc:
                self._connection.rollback()
                raise StorageUnavailable(f"SQLite {self.target}: {exc}") from exc

        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    async def _connect(self) -> None:
        def connect() -> None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                connection = sqlite3.connect(self.path, timeout=30, isolation_level=None)
                # Only a new, empty file takes these. Pages of 16 KiB: a stored body spans a
                # quarter of the overflow pages and WAL frames it does in 4 KiB ones.
                connection.execute(f"PRAGMA page_size={PAGE_SIZE}")
                # Lets `scrapy prune` give space back bit by bit.
                connection.execute("PRAGMA auto_vacuum=INCREMENTAL")
                connection.execute("PRAGMA journal_mode=WAL")
            except (OSError, sqlite3.DatabaseError) as exc:  # a file that cannot be made or read
                raise StorageRefused(f"SQLite {self.target}: {exc}") from exc
            connection.execute("PRAGMA synchronous=NORMAL")
            self._connection = connection

        await asyncio.get_running_loop().run_in_executor(self._executor, connect)

    async def _migrate(self, latest: int) -> None:
        def migrate(connection: sqlite3.Connection) -> None:
            connection.execute("BEGIN IMMEDIATE")
            try:
                connection.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
                row = connection.execute("SELECT MAX(version) FROM schema_version").fetchone()
                current = row[0] or 0
                for version in range(current + 1, latest + 1):
                    for statement in migration_statements(version, "sqlite"):
                        connection.execute(statement)
                    connection.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise

        await self._run(migrate)

    async def close(self) -> None:
        def close() -> None:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

        await asyncio.get_running_loop().run_in_executor(self._executor, close)
        self._executor.shutdown(wait=True)

    async def write(self, batch: Batch) -> None:
        def write(connection: sqlite3.Connection) -> None:
            with connection:  # one transaction
                connection.execute("BEGIN")
                for kind, sql in _WRITE.items():
                    rows = getattr(batch, kind)
                    if rows:
                        connection.executemany(sql, map(_sqlite_row, rows))

        await self._run(write)

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        def execute(connection: sqlite3.Connection) -> list[tuple[Any, ...]]:
            return connection.execute(sql, _sqlite_row(params)).fetchall()

        return await self._run(execute)

    async def execute_count(self, sql: str, params: Sequence[Any] = ()) -> int:
        def execute(connection: sqlite3.Connection) -> int:
            return connection.execute(sql, _sqlite_row(params)).rowcount

        return await self._run(execute)

    async def vacuum(self, tables: Sequence[str]) -> None:
        def vacuum(connection: sqlite3.Connection) -> None:
            if connection.execute("PRAGMA auto_vacuum").fetchone()[0] != 2:
                # A file created before incremental vacuum: one full VACUUM switches it over.
                connection.execute("PRAGMA auto_vacuum=INCREMENTAL")
                connection.execute("VACUUM")
            connection.execute("PRAGMA incremental_vacuum").fetchall()
            for table in tables:
                connection.execute(f"ANALYZE {table}")

        await self._run(vacuum)

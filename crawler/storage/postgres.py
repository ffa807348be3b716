"""The shared backend: PostgreSQL through psycopg 3's asynchronous pool, on the reactor's
asyncio loop (no thread, no blocking call)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from crawler.storage.backend import Batch, StorageBackend, StorageRefused, StorageUnavailable
from crawler.storage.schema import migration_statements, upsert_key_positions, write_statements

_WRITE = write_statements("%s")
_KEYS = upsert_key_positions()
# Any constant will do: it serialises schema migrations of processes that start together.
_MIGRATION_LOCK = 72_401_337
# Answers of a server that is there but cannot take the connection now (SQLSTATE 57P03, 53300);
# libpq gives connection failures as text only.
_TRANSIENT_REFUSALS = ("starting up", "shutting down", "recovery", "too many", "connection slots")


class PostgresBackend(StorageBackend):
    dialect = "postgresql"

    def __init__(self, database_url: str, *, connect_timeout: float = 5.0):
        self.database_url = database_url
        info = psycopg.conninfo.conninfo_to_dict(database_url)
        info.pop("password", None)
        self.target = f"postgresql://{info.get('host', 'localhost')}:{info.get('port', 5432)}/{info.get('dbname', '')}"
        self._connect_timeout = connect_timeout
        self._connections: AsyncConnectionPool | None = None

    async def _connect(self) -> None:
        # One connection of its own first: the pool retries any failure for ever, while a
        # refusal (authentication, unknown database or role) is final and is said at once.
        try:
            connection = await psycopg.AsyncConnection.connect(
                self.database_url, connect_timeout=max(1, int(self._connect_timeout))
            )
        except psycopg.OperationalError as exc:
            message = " ".join(str(exc).split())
            if _refused(message):
                raise StorageRefused(f"{self.target}: {message}") from exc
            raise StorageUnavailable(f"{self.target}: {message}") from exc
        await connection.close()
        # Autocommit: a statement run on its own is one round trip rather than three (BEGIN,
        # the statement, COMMIT); batches and migrations open their transactions themselves.
        self._connections = AsyncConnectionPool(
            self.database_url,
            min_size=1,
            max_size=2,
            open=False,
            timeout=self._connect_timeout,
            kwargs={"connect_timeout": max(1, int(self._connect_timeout)), "autocommit": True},
        )
        # No check on checkout: it costs a round trip per batch. A connection broken by a
        # server restart fails its write, is discarded by the pool, and the write is retried.
        await self._connections.open(wait=False)

    async def _migrate(self, latest: int) -> None:
        async with self._connection() as connection, connection.transaction():
            await connection.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            await connection.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            cursor = await connection.execute("SELECT MAX(version) FROM schema_version")
            row = await cursor.fetchone()
            current = (row[0] if row else None) or 0
            for version in range(current + 1, latest + 1):
                for statement in migration_statements(version, "postgresql"):
                    await connection.execute(statement)
                await connection.execute("INSERT INTO schema_version (version) VALUES (%s)", (version,))

    def _connection(self):
        if self._connections is None:
            raise StorageUnavailable("PostgreSQL backend is not open")
        return _Guarded(self._connections, self.target)

    async def close(self) -> None:
        if self._connections is not None:
            await self._connections.close()
            self._connections = None

    async def write(self, batch: Batch) -> None:
        async with self._connection() as connection, connection.transaction(), connection.cursor() as cursor:
            for kind, sql in _WRITE.items():
                rows = getattr(batch, kind)
                if rows and kind in _KEYS:
                    rows = sorted(rows, key=_key_of(_KEYS[kind]))  # stable: one key's rows keep their order
                if rows:
                    await cursor.executemany(sql, rows)

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        async with self._connection() as connection:
            cursor = await connection.execute(sql.replace("?", "%s"), tuple(params))
            return await cursor.fetchall() if cursor.description else []

    async def execute_count(self, sql: str, params: Sequence[Any] = ()) -> int:
        async with self._connection() as connection:
            cursor = await connection.execute(sql.replace("?", "%s"), tuple(params))
            return cursor.rowcount

    async def vacuum(self, tables: Sequence[str]) -> None:
        if not tables:
            return
        async with self._connection() as connection:  # autocommit: VACUUM cannot run in a transaction
            await connection.execute(f"VACUUM (ANALYZE) {', '.join(tables)}")


def _key_of(positions: tuple[int, ...]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    return lambda row: tuple(row[i] for i in positions)


def _refused(message: str) -> bool:
    """Whether a connection failure is the server's final answer rather than an outage."""
    answered = "FATAL:" in message or "no password supplied" in message
    return answered and not any(transient in message for transient in _TRANSIENT_REFUSALS)


class _Guarded:
    """A pooled connection whose connection failures surface as StorageUnavailable."""

    def __init__(self, pool: AsyncConnectionPool, target: str):
        self._context = pool.connection()
        self._target = target

    async def __aenter__(self) -> psycopg.AsyncConnection:
        try:
            return await self._context.__aenter__()
        except (PoolTimeout, psycopg.OperationalError) as exc:
            raise StorageUnavailable(f"{self._target}: {exc}") from exc

    async def __aexit__(self, *exc_info: Any) -> bool:
        try:
            await self._context.__aexit__(*exc_info)
        except (PoolTimeout, psycopg.OperationalError) as exc:
            raise StorageUnavailable(f"{self._target}: {exc}") from exc
        error = exc_info[1]
        if isinstance(error, psycopg.OperationalError):
            raise StorageUnavailable(f"{self._target}: {error}") from error
        return False

"""The storage interface: one schema, written in batches, read with ``?`` placeholders."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from crawler.storage.schema import MIGRATIONS, Dialect
from crawler.storage.values import json_value


class StorageUnavailable(Exception):
    """The database cannot be reached or refused the write; the caller keeps its rows and
    tries again later."""


class StorageRefused(Exception):
    """The database answered and refused the connection (authentication, unknown database or
    role): trying again will not help."""


@dataclass(slots=True)
class Batch:
    """Rows written together in one transaction."""

    pages: list[tuple[Any, ...]] = field(default_factory=list)
    new_pages: list[tuple[Any, ...]] = field(default_factory=list)
    """Pages rows written only where the URL has no row yet."""
    sitemap_entries: list[tuple[Any, ...]] = field(default_factory=list)
    domains: list[tuple[Any, ...]] = field(default_factory=list)
    robots: list[tuple[Any, ...]] = field(default_factory=list)
    robots_decisions: list[tuple[Any, ...]] = field(default_factory=list)
    workers: list[tuple[Any, ...]] = field(default_factory=list)
    stats_samples: list[tuple[Any, ...]] = field(default_factory=list)
    domain_state: list[tuple[Any, ...]] = field(default_factory=list)
    request_log: list[tuple[Any, ...]] = field(default_factory=list)

    KINDS: ClassVar[tuple[str, ...]] = (
        "pages",
        "new_pages",
        "sitemap_entries",
        "domains",
        "robots",
        "robots_decisions",
        "workers",
        "stats_samples",
        "domain_state",
        "request_log",
    )

    def __len__(self) -> int:
        return sum(len(getattr(self, kind)) for kind in self.KINDS)

    def head(self, size: int) -> Batch:
        """The first ``size`` rows of each kind."""
        return Batch(**{kind: getattr(self, kind)[:size] for kind in self.KINDS})

    def remove(self, written: Batch) -> None:
        for kind in self.KINDS:
            del getattr(self, kind)[: len(getattr(written, kind))]


class StorageBackend(ABC):
    dialect: Dialect
    target: str
    """Where the rows are, for people (a file path or a database URL without password)."""

    async def open(self) -> None:
        """Connect and bring the schema to the latest version."""
        await self._connect()
        await self._migrate(len(MIGRATIONS))

    @abstractmethod
    async def _connect(self) -> None: ...

    @abstractmethod
    async def _migrate(self, latest: int) -> None: ...

    @abstractmethod
    async def close(self) -> None: ...

    @abstractmethod
    async def write(self, batch: Batch) -> None:
        """Upsert the batch in one transaction; raises StorageUnavailable."""

    @abstractmethod
    async def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement with ``?`` placeholders, commit, and return its rows."""

    @abstractmethod
    async def execute_count(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement with ``?`` placeholders, commit, and return how many rows it changed."""

    @abstractmethod
    async def vacuum(self, tables: Sequence[str]) -> None:
        """Give the space of deleted rows back and refresh the planner's statistics."""

    async def dicts(self, sql: str, columns: Sequence[str], params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """``sql`` selects ``columns`` in that order: its rows as dicts of JSON values
        (timestamps as ISO text, bodies left out)."""
        return [{c: json_value(v) for c, v in zip(columns, row)} for row in await self.execute(sql, params)]

    async def ping(self) -> None:
        """Raise ``StorageUnavailable`` unless the database answers."""
        await self.execute("SELECT 1")

    async def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The first column of the first row, or None."""
        rows = await self.execute(sql, params)
        return rows[0][0] if rows else None

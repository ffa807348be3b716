"""The storage interface the pipeline and the spiders write through, and its factory."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar
from typing import Any

from crawler.storage.schema import MIGRATIONS, Dialect


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
        "pages", "new_pages", "sitemap_entries", "domains", "robots", "robots_decisions",
        "workers", "stats_samples", "domain_state", "request_log",
    )  # fmt: skip

    def __len__(self) -> int:
        return sum(len(getattr(self, kind)) for kind in self.KINDS)

    def head(self, size: int) -> Batch:
        """The first ``size`` rows of each kind."""
        return Batch(**{kind: getattr(self, kind)[:size] for kind in self.KINDS})

    def remove(self, written: Batch) -> None:
        for kind in self.KINDS:
            del getattr(self, kind)[: len(getattr(written, kind))]


@dataclass(slots=True)
class JobRecord:
    id: str
    spider: str
    seeds: str
    started_at: Any
    status: str = "running"


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

    async def start_job(self, job: JobRecord) -> None:
        await self.execute(
            "INSERT INTO crawl_jobs (id, spider, seeds, started_at, status) VALUES (?, ?, ?, ?, ?)",
            (job.id, job.spider, job.seeds, job.started_at, job.status),
        )

    async def finish_job(
        self, job_id: str, *, finished_at: Any, status: str, reason: str, counters: dict[str, int], stats: str
    ) -> None:
        await self.execute(
            "UPDATE crawl_jobs SET finished_at = ?, status = ?, finish_reason = ?, pages_fetched = ?, "
            "pages_failed = ?, rows_written = ?, stats = ? WHERE id = ?",
            (
                finished_at,
                status,
                reason,
                counters.get("pages_fetched", 0),
                counters.get("pages_failed", 0),
                counters.get("rows_written", 0),
                stats,
                job_id,
            ),
        )


def open_backend(database_url: str) -> StorageBackend:
    """The backend for ``database_url`` (``sqlite:///PATH`` or ``postgresql://…``), not yet opened."""
    scheme = database_url.partition("://")[0].lower()
    if scheme == "sqlite":
        from crawler.storage.sqlite import SqliteBackend

        return SqliteBackend(database_url)
    if scheme in ("postgresql", "postgres"):
        from crawler.storage.postgres import PostgresBackend

        return PostgresBackend(database_url)
    raise ValueError(f"DATABASE_URL must start with sqlite:// or postgresql://, got {database_url!r}")

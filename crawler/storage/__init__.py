"""Where rows go: one schema, two backends (SQLite embedded, PostgreSQL shared), and every SQL
statement of the crawler, in modules by concern."""

from crawler.storage.backend import StorageBackend, StorageRefused, StorageUnavailable

__all__ = ["StorageBackend", "StorageRefused", "StorageUnavailable", "is_postgres", "open_backend"]

POSTGRES_SCHEMES = ("postgresql", "postgres")


def is_postgres(database_url: str) -> bool:
    """Whether ``database_url`` names a PostgreSQL database."""
    return database_url.partition("://")[0].lower() in POSTGRES_SCHEMES


def open_backend(database_url: str) -> StorageBackend:
    """The backend for ``database_url`` (``sqlite:///PATH`` or ``postgresql://…``), not yet opened."""
    scheme = database_url.partition("://")[0].lower()
    # Imported when chosen: a crawl on SQLite never loads psycopg.
    if scheme == "sqlite":
        from crawler.storage.sqlite import SqliteBackend

        return SqliteBackend(database_url)
    if scheme in POSTGRES_SCHEMES:
        from crawler.storage.postgres import PostgresBackend

        return PostgresBackend(database_url)
    raise ValueError(f"DATABASE_URL must start with sqlite:// or postgresql://, got {database_url!r}")

"""Where rows go: one schema, two backends (SQLite embedded, PostgreSQL shared)."""

from crawler.storage.backend import StorageBackend, StorageUnavailable, open_backend

__all__ = ["StorageBackend", "StorageUnavailable", "open_backend"]

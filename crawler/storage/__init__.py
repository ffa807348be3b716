"""Where rows go: one schema, two backends (SQLite embedded, PostgreSQL shared)."""

from crawler.storage.backend import StorageBackend, StorageRefused, StorageUnavailable, open_backend

__all__ = ["StorageBackend", "StorageRefused", "StorageUnavailable", "open_backend"]

"""What operators ask of running crawls, as the database holds it: ``domain_controls``."""

from __future__ import annotations

from typing import Any

from crawler.storage.backend import StorageBackend


async def domain_controls(backend: StorageBackend) -> list[tuple[Any, ...]]:
    """(pattern, paused, max concurrency, min delay, reset requested at) of every control."""
    return await backend.execute("SELECT domain, paused, max_concurrency, min_delay, reset_requested_at FROM domain_controls")

"""What the database keeps of domains between jobs: learned pacing and robots.txt files."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from crawler.storage.backend import StorageBackend


async def learned_delays(backend: StorageBackend) -> list[tuple[str, float, float]]:
    """Domains that learned a delay or a floor: (domain, delay, floor)."""
    rows = await backend.execute(
        "SELECT domain, adaptive_delay_seconds, adaptive_delay_floor_seconds FROM domains "
        "WHERE adaptive_delay_seconds > 0 OR adaptive_delay_floor_seconds > 0"
    )
    return [(domain, float(delay), float(floor)) for domain, delay, floor in rows]


async def valid_robots_files(backend: StorageBackend, now: datetime) -> list[tuple[Any, ...]]:
    """robots.txt files stored by earlier jobs that are still valid at ``now``: (domain, text,
    status, fetched at, expires at)."""
    return await backend.execute(
        "SELECT domain, robots_txt, robots_status, robots_fetched_at, robots_expires_at FROM domains "
        "WHERE robots_status IS NOT NULL AND robots_expires_at > ?",
        (now,),
    )

"""Who a crawl process is, and its ``workers`` and ``stats_samples`` rows."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping
from datetime import datetime
from typing import Any


def worker_id(job_id: str, hostname: str | None = None, pid: int | None = None) -> str:
    """Unique among running processes: host, process id and job (64 characters at most)."""
    hostname = hostname or socket.gethostname()
    pid = os.getpid() if pid is None else pid
    return f"{hostname[:23]}:{pid}:{job_id[:32]}"


def stats_json(stats: Mapping[str, Any]) -> str:
    """The Scrapy stats that are numbers, as JSON (times and texts left out)."""
    numbers = {k: v for k, v in stats.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    return json.dumps(numbers, sort_keys=True, separators=(",", ":"))


def worker_row(
    wid: str, spider: Any, started_at: datetime, heartbeat_at: datetime, state: str, stats: str
) -> tuple[Any, ...]:
    """In ``WORKER_COLUMNS`` order."""
    return (
        wid,
        spider.job_id,
        getattr(spider, "crawl_id", None),
        spider.name,
        socket.gethostname(),
        os.getpid(),
        started_at,
        heartbeat_at,
        state,
        stats,
    )

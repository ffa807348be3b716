"""What the tests of shared crawls (several ``scrapy crawl`` processes, one frontier in Redis)
have in common: their settings, how their workers must end, and what a whole crawl's rows are."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import REDIS_URL
from tests.helpers import Database, finish_all
from tests.testweb import TestWeb

TOLERANCE = 0.010
"""Seconds a gap between two requests may fall short of the delay (the server's clock)."""


def shared_settings(crawl_name: str, redis_url: str = REDIS_URL, **extra: str) -> dict[str, str]:
    return {"REDIS_URL": redis_url, "CRAWLER_CRAWL_ID": crawl_name, "CRAWLER_IDLE_CLOSE_SECONDS": "3", **extra}


def finish_cleanly(workers: list[subprocess.Popen[bytes]], logs: list[Path], timeout: float = 240) -> list[str]:
    """The workers' logs once they have ended, each with status 0 (or killed) and no traceback."""
    outputs = finish_all(workers, logs, timeout)
    for worker, output in zip(workers, outputs):
        assert worker.returncode in (0, -9), output[-5000:]
        assert "Traceback" not in output, output[-5000:]
    return outputs


def page_paths(pages: int) -> set[str]:
    """The paths of a paced test site of ``pages`` pages."""
    return {"/", "/private/page"} | {f"/p/{n}" for n in range(pages)}


def statuses_are_a_whole_crawls(rows: dict[str, dict]) -> bool:
    """Every page fetched but /p/0, the home page under another URL (a twin), and the page
    robots.txt refuses."""
    return all(
        row["status"] == {"/p/0": "duplicate", "/private/page": "blocked_by_robots"}.get(path, "fetched")
        for path, row in rows.items()
    )


def rows_by_path(database: Database, web: TestWeb, label: str) -> dict[str, dict]:
    return {url.removeprefix(web.base(label)): row for url, row in database.pages().items()}

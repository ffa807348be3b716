"""Spacing as the site sees it when the process is busy: CPU work queued on the reactor ahead of
a request's write to the socket must not shorten the gap before the domain's next request."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Self

import pytest
from scrapy import Request, signals
from scrapy.crawler import Crawler

from tests.helpers import Database, crawl
from tests.testweb import TestWeb

pytestmark = pytest.mark.integration

TOLERANCE = 0.010
STALL = 0.25


class StallBeforeSend:
    """Every other request, block the reactor for ``STALL`` s in the turn that would send it:
    a large page being parsed, a garbage collection."""

    def __init__(self) -> None:
        self.requests = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        extension = cls()
        crawler.signals.connect(extension.reached, signal=signals.request_reached_downloader)
        return extension

    def reached(self, request: Request) -> None:
        self.requests += 1
        if self.requests % 2:
            # Runs on the next turn before its I/O callbacks, so before the socket write.
            asyncio.get_running_loop().call_soon(time.sleep, STALL)


@pytest.fixture
def database(tmp_path: Path) -> Database:
    return Database(f"sqlite:///{tmp_path / 'crawler.db'}")  # storage is not the subject


def test_spacing_counts_from_the_socket_write_on_a_busy_reactor(
    web: TestWeb, database: Database, frontier: dict[str, str]
) -> None:
    web.clear()
    extensions = json.dumps({f"{__name__}.StallBeforeSend": 0})
    result = crawl("links", database, url=web.url("delayed"), settings={**frontier, "EXTENSIONS": extensions})
    starts = sorted(entry.start for entry in web.log("delayed"))
    assert len(starts) == 14  # robots.txt, / and 12 pages
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert min(gaps) >= 0.3 - TOLERANCE, gaps
    assert "limiter/unstamped_count" not in result.stderr  # every departure was seen at the socket


def test_requests_leave_the_margin_later_than_the_delay_allows(
    web: TestWeb, database: Database, frontier: dict[str, str]
) -> None:
    web.clear()
    crawl("links", database, url=web.url("delayed"), settings={**frontier, "CRAWLER_SPACING_MARGIN": "0.5"})
    starts = sorted(entry.start for entry in web.log("delayed"))
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert len(starts) == 14 and min(gaps) >= 0.3 * 1.5 - TOLERANCE, gaps  # 0.3 s with no margin

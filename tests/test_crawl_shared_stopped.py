"""A worker of a shared crawl stopped (SIGSTOP) while it holds work, and continued once another
worker has paced the site meanwhile: whatever it was about to send leaves no earlier than the
domain's delay allows, whether its leases lapsed or were renewed. Asserted from the server's own
request log."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
import redis

from tests.conftest import REDIS_URL
from tests.helpers import Database, crawl_store, start_crawl, wait_until
from tests.shared_crawls import TOLERANCE, finish_cleanly, page_paths, rows_by_path, shared_settings
from tests.testweb import TestWeb

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "lease",
    [
        "3",  # lapsed: the request was handed out again
        "120",  # renewed at the continue, but the frontier held the domain's slot for it 10 s only
    ],
)
def test_a_worker_stopped_past_its_slots_sends_nothing_early_when_continued(
    web: TestWeb, postgres_database: Database, crawl_name: str, tmp_path: Path, lease: str
) -> None:
    web.clear()
    settings = shared_settings(crawl_name, CRAWLER_LEASE_SECONDS=lease, CRAWLER_BATCH_SECONDS="0.2")
    client = redis.Redis.from_url(REDIS_URL)
    logs = [tmp_path / "stopped.log", tmp_path / "other.log"]
    stopped = start_crawl("links", postgres_database, logs[0], url=web.url("stoppable"), settings=settings)
    wait_until(lambda: len(web.log("stoppable")) >= 10, 90, "the first worker crawling")
    while True:  # stopped while it holds work handed out to it (the only worker yet)
        stopped.send_signal(signal.SIGSTOP)
        if crawl_store(client, crawl_name).sizes().leased > 0:
            break
        stopped.send_signal(signal.SIGCONT)
        time.sleep(0.05)
    other = start_crawl("links", postgres_database, logs[1], url=web.url("stoppable"), settings=settings)
    served = len(web.log("stoppable"))
    # The other worker paces the site meanwhile: once the stopped one's leases expire (3 s), or
    # once the frontier stops holding the slot of the request it was about to send (10 s).
    wait_until(lambda: len(web.log("stoppable")) >= served + 15, 90, "the other worker crawling")
    stopped.send_signal(signal.SIGCONT)
    finish_cleanly([stopped, other], logs)
    starts = sorted(entry.start for entry in web.log("stoppable"))
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert min(gaps) >= 0.2 - TOLERANCE, sorted(gaps)[:5]  # Crawl-delay 0.2, whoever sent them
    assert rows_by_path(postgres_database, web, "stoppable").keys() == page_paths(200)

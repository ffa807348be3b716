"""A shared crawl through outages, at a scale the suite affords (``bench.shared_outages`` runs
them at full scale): Redis answering nothing at all, PostgreSQL away for longer than the
leases, and a crawl whose workers were all killed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis

from tests.conftest import REDIS_ADDRESS, REDIS_URL
from tests.helpers import Database, crawl_keys, start_crawl
from tests.outage_runs import postgres_stopped, redis_blackholed
from tests.testweb import TestWeb

pytestmark = pytest.mark.integration

SILENCE = 5.0


def test_redis_answering_nothing_pauses_the_worker_whose_reactor_stays_responsive(
    web: TestWeb, postgres_database: Database, crawl_name: str, tmp_path: Path
) -> None:
    database = postgres_database
    run = redis_blackholed(
        web,
        database,
        REDIS_ADDRESS,
        crawl_name,
        tmp_path,
        site="shared",
        silence=SILENCE,
        settings={
            "CRAWLER_LEASE_SECONDS": "3",
            "CRAWLER_REDIS_RETRY_SECONDS": "0.5",
        },  # the silence outlives the leases
    )
    (log,) = run.logs
    assert "Redis unavailable" in log and "Redis available again" in log, log[-3000:]
    assert "Traceback" not in log, log[-3000:]
    beats = run.heartbeats_during_outage()
    assert len(beats) >= SILENCE - 2, (beats, log[-3000:])  # a line every second kept coming
    assert max(lag for _, lag in beats) < 0.5, beats
    assert run.rows.keys() == {"/", "/private/page"} | {f"/p/{n}" for n in range(150)}  # resumed, nothing lost
    assert all(row["status"] in ("fetched", "blocked_by_robots") for path, row in run.rows.items() if path != "/p/0")
    assert run.rows["/p/0"]["status"] == "duplicate"  # the home page under another URL
    assert run.fetched_twice == []  # leases outlived by the silence were renewed before anything else


def test_postgres_away_longer_than_the_leases_fetches_no_page_twice(
    web: TestWeb, crawl_name: str, tmp_path: Path
) -> None:
    lease, outage = 2.0, 6.0
    run = postgres_stopped(
        web,
        crawl_name,
        tmp_path,
        site="shared",
        workers=2,
        outage=outage,
        settings={"REDIS_URL": REDIS_URL, "CRAWLER_LEASE_SECONDS": str(lease)},
    )
    assert any("Database available again" in log for log in run.logs), run.logs[0][-3000:]
    assert run.fetched_twice == []
    assert run.rows.keys() == {"/", "/private/page"} | {f"/p/{n}" for n in range(150)}
    renewed = sum(int(n) for log in run.logs for n in _stat(log, "frontier/lease_renewed"))
    assert renewed > 0


def test_a_crawl_whose_workers_were_all_killed_is_reclaimed_by_the_next_run(
    web: TestWeb, postgres_database: Database, crawl_name: str, tmp_path: Path
) -> None:
    database = postgres_database
    web.clear()
    # No idle close: the worker waits for work until it is killed, its crawl's keys left behind.
    settings = {
        "REDIS_URL": REDIS_URL,
        "CRAWLER_CRAWL_ID": crawl_name,
        "CRAWLER_IDLE_CLOSE_SECONDS": "0",
        "CRAWLER_CRAWL_REAP_SECONDS": "2",
    }
    worker = start_crawl("links", database, tmp_path / "killed.log", url=web.url("fast"), settings=settings)
    deadline = time.monotonic() + 90
    while len({entry.path for entry in web.log("fast")}) < 42:  # robots.txt and every page
        assert time.monotonic() < deadline, "the first run did not crawl"
        time.sleep(0.2)
    time.sleep(1.0)  # its last rows stored
    worker.kill()  # SIGKILL, by PID: no idle close, no clean up
    worker.wait()
    assert list(redis.Redis.from_url(REDIS_URL).scan_iter(match=f"{crawl_keys(crawl_name)}:*"))
    first = len(web.log("fast"))
    time.sleep(2.5)  # longer than the reap time
    log = tmp_path / "again.log"
    # Every page due again at once: the pages the killed run stored were not lost with it.
    again_settings = {**settings, "CRAWLER_IDLE_CLOSE_SECONDS": "1", "CRAWLER_RECRAWL_MIN_INTERVAL": "0"}
    again = start_crawl("links", database, log, url=web.url("fast"), settings=again_settings)
    assert again.wait(timeout=120) == 0
    output = log.read_text()
    assert f"The shared crawl {crawl_name} had no worker" in output, output[-3000:]
    assert len(web.log("fast")) - first >= 41, output[-3000:]  # every page again


def _stat(log: str, name: str) -> list[str]:
    return [line.split(":")[-1].strip(" ,") for line in log.splitlines() if f"'{name}'" in line]

"""A shared crawl through faults: workers killed with SIGKILL at random moments, Redis flushed
under the workers, Redis away for a while. Asserted from the server's own request log and the
rows: nothing is lost, nothing is fetched twice but what a killed worker held."""

from __future__ import annotations

import random
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
import redis

from crawler import exitcodes
from tests.conftest import REDIS_URL
from tests.helpers import Database, crawl_store, finish_all, start_crawl, wait_until
from tests.shared_crawls import finish_cleanly, page_paths, rows_by_path, shared_settings, statuses_are_a_whole_crawls
from tests.testweb import TestWeb
from tests.throwaway_redis import ThrowawayRedis

pytestmark = pytest.mark.integration


def test_workers_killed_at_five_random_moments_lose_nothing(
    web: TestWeb, postgres_database: Database, crawl_name: str, tmp_path: Path
) -> None:
    seed = random.randrange(1_000_000)
    rng = random.Random(seed)
    web.clear()
    settings = shared_settings(
        crawl_name,
        CONCURRENT_REQUESTS_PER_DOMAIN="4",
        CRAWLER_LEASE_SECONDS="4",
        CRAWLER_BATCH_SECONDS="0.2",
    )
    client = redis.Redis.from_url(REDIS_URL)
    logs: list[Path] = []

    def start() -> subprocess.Popen[bytes]:
        logs.append(tmp_path / f"worker-{len(logs)}.log")
        return start_crawl("links", postgres_database, logs[-1], url=web.url("killable"), settings=settings)

    workers = [start() for _ in range(3)]
    all_workers = list(workers)
    # The moments count from when the crawl holds its first lease, not from when the processes
    # were started: on a busy machine, starting takes seconds.
    wait_until(lambda: crawl_store(client, crawl_name).sizes().leased > 0, 90, "the crawl leasing work")
    began = time.monotonic()
    leases_at_kills = []
    for moment in sorted(rng.uniform(0.0, 12.0) for _ in range(5)):
        time.sleep(max(0.0, began + moment - time.monotonic()))
        victim = rng.choice(workers)
        leases_at_kills.append(crawl_store(client, crawl_name).sizes().leased)
        victim.kill()  # SIGKILL, by PID
        victim.wait()
        workers.remove(victim)
        workers.append(start())
        all_workers.append(workers[-1])
    finish_cleanly(all_workers, logs)

    rows = rows_by_path(postgres_database, web, "killable")
    assert rows.keys() == page_paths(300), f"seed {seed}"
    assert statuses_are_a_whole_crawls(rows)
    fetched = Counter(entry.path for entry in web.log("killable") if entry.path != "/robots.txt")
    duplicates = sum(n - 1 for n in fetched.values())
    assert sum(leases_at_kills) > 0, "no kill happened while work was leased"
    print(f"seed {seed}: {duplicates} duplicate fetches, leases outstanding at the kills {leases_at_kills}")
    assert duplicates <= sum(leases_at_kills), (seed, duplicates, leases_at_kills)


def test_a_flushed_frontier_stops_every_worker_with_its_own_status(
    web: TestWeb, database: Database, crawl_name: str, tmp_path: Path
) -> None:
    server = ThrowawayRedis(tmp_path / "redis", persistent=False)
    settings = shared_settings(crawl_name, server.url)  # leases of 120 s, which nothing may be left holding
    server.start()
    try:
        web.clear()
        logs = [tmp_path / f"worker-{n}.log" for n in range(2)]
        workers = [start_crawl("links", database, log, url=web.url("shared"), settings=settings) for log in logs]
        wait_until(lambda: len(web.log("shared")) >= 20, 60, "the crawl well under way")
        redis.Redis.from_url(server.url).flushall()  # as a restart without persistence leaves it
        flushed_at = time.monotonic()
        outputs = finish_all(workers, logs, 30)
        stopped_within = time.monotonic() - flushed_at
        lost_jobs = {status for (status,) in database.query("SELECT status FROM crawl_jobs")}
        # The same command again: the rows say what was fetched, and the links stored with them
        # lead to what was not (pages not yet due are not fetched again).
        again = tmp_path / "again.log"
        started_again = time.time()
        finish_cleanly(
            [start_crawl("links", database, again, url=web.url("shared"), settings=settings)],
            [again],
        )
    finally:
        server.stop()
    served = Counter(entry.path for entry in web.log("shared") if entry.path != "/robots.txt")
    assert served.keys() == page_paths(150) - {"/private/page"} and max(served.values()) == 1  # robots.txt refuses it
    assert rows_by_path(database, web, "shared").keys() == page_paths(150)
    for worker, output in zip(workers, outputs):
        assert worker.returncode == exitcodes.FRONTIER_LOST, output[-5000:]
        (error,) = [line.split("] ERROR: ", 1)[1] for line in output.splitlines() if "] ERROR: " in line]
        assert error == (
            f"Closing the job (failed_frontier_lost): the shared crawl {crawl_name}'s keys vanished from Redis "
            "(flushed, or restarted without its data): its queue, leases and seen URLs are lost; see the "
            "README's 'Redis as a cache'"
        )
        assert "Traceback" not in output
    assert stopped_within < 10
    assert lost_jobs == {"failed"}
    # Nothing the lost workers did after the flush holds the domain (a robots.txt claim or a slot
    # reserved in the new keys held it one lease time): the crawl started again fetches as a new
    # one would, within its start-up.
    first_fetch = min(entry.start for entry in web.log("shared") if entry.start > started_again)
    assert first_fetch - started_again < 15


def test_redis_away_for_a_while_pauses_the_workers_and_loses_nothing(
    web: TestWeb, database: Database, crawl_name: str, tmp_path: Path
) -> None:
    server = ThrowawayRedis(tmp_path / "redis")
    server.start()
    try:
        web.clear()
        settings = shared_settings(crawl_name, server.url, CRAWLER_REDIS_TIMEOUT="1")
        logs = [tmp_path / f"worker-{n}.log" for n in range(2)]
        workers = [start_crawl("links", database, log, url=web.url("shared"), settings=settings) for log in logs]
        deadline = time.monotonic() + 60
        while len(web.log("shared")) < 40:  # well into the crawl
            assert time.monotonic() < deadline, "the crawl did not start"
            time.sleep(0.05)
        server.stop()
        stopped_at = len(web.log("shared"))
        time.sleep(4)
        server.start()
        outputs = finish_cleanly(workers, logs)
    finally:
        server.stop()
    assert any("Redis unavailable" in output for output in outputs)
    assert any("Redis available again" in output for output in outputs)
    assert len(web.log("shared")) > stopped_at + 20  # the crawl went on afterwards
    rows = rows_by_path(database, web, "shared")
    assert rows.keys() == page_paths(150)
    assert statuses_are_a_whole_crawls(rows)

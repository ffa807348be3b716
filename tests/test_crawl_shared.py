"""Several ``scrapy crawl`` processes sharing one frontier through Redis, as users scale: the
same command started N times, workers killed with SIGKILL, Redis going away for a while.
Asserted from the server's own request log and the rows."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import redis

from crawler import exitcodes
from crawler import settings as default_settings
from crawler.redis.shards import shard_pattern
from tests.conftest import REDIS_URL
from tests.helpers import (
    ROOT,
    Database,
    crawl,
    crawl_environment,
    crawl_keys,
    crawl_store,
    finish_all,
    start_crawl,
    wait_until,
)
from tests.testweb import TestWeb
from tests.throwaway_redis import ThrowawayRedis

pytestmark = pytest.mark.integration

TOLERANCE = 0.010


def _shared(crawl_name: str, redis_url: str = REDIS_URL, **extra: str) -> dict[str, str]:
    return {"REDIS_URL": redis_url, "CRAWLER_CRAWL_ID": crawl_name, "CRAWLER_IDLE_CLOSE_SECONDS": "3", **extra}


def _finish(workers: list[subprocess.Popen[bytes]], logs: list[Path], timeout: float = 240) -> list[str]:
    outputs = finish_all(workers, logs, timeout)
    for worker, output in zip(workers, outputs):
        assert worker.returncode in (0, -9), output[-5000:]
        assert "Traceback" not in output, output[-5000:]
    return outputs


def _page_paths(pages: int) -> set[str]:
    return {"/", "/private/page"} | {f"/p/{n}" for n in range(pages)}


def _statuses_are_a_whole_crawls(rows: dict[str, dict]) -> bool:
    """Every page fetched but /p/0, the home page under another URL (a twin), and the page
    robots.txt refuses."""
    return all(
        row["status"] == {"/p/0": "duplicate", "/private/page": "blocked_by_robots"}.get(path, "fetched")
        for path, row in rows.items()
    )


def _rows_by_path(database: Database, web: TestWeb, label: str) -> dict[str, dict]:
    return {url.removeprefix(web.base(label)): row for url, row in database.pages().items()}


def test_the_same_command_three_times_is_one_polite_crawl(
    web: TestWeb, database: Database, crawl_name: str, tmp_path: Path
) -> None:
    web.clear()
    logs = [tmp_path / f"worker-{n}.log" for n in range(3)]
    workers = [start_crawl("links", database, log, url=web.url("shared"), settings=_shared(crawl_name)) for log in logs]
    _finish(workers, logs)
    log = web.log("shared")
    fetched = Counter(entry.path for entry in log)
    assert fetched["/robots.txt"] == 1 and fetched["/"] == 1  # seeds and robots.txt once for all
    assert [path for path, n in fetched.items() if n > 1] == []
    starts = sorted(entry.start for entry in log)
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert min(gaps) >= 0.05 - TOLERANCE, sorted(gaps)[:5]  # Crawl-delay 0.05, across the processes
    rows = _rows_by_path(database, web, "shared")
    assert rows.keys() == _page_paths(150)
    jobs = database.query("SELECT id FROM crawl_jobs")
    assert len(jobs) == 3
    fetched_by = Counter(row["job_id"] for row in rows.values())
    assert len(fetched_by) >= 2, fetched_by  # the work was shared
    # Complete: cleared, but for the marks (the crawl's and each shard's) that tell the workers
    # still open that it ended, for a while.
    client = redis.Redis.from_url(REDIS_URL)
    assert list(client.scan_iter(match=f"{crawl_keys(crawl_name)}:*")) == [f"{crawl_keys(crawl_name)}:born".encode()]
    shard_keys = list(client.scan_iter(match=shard_pattern(crawl_keys(crawl_name))))
    assert len(shard_keys) == default_settings.CRAWLER_REDIS_SHARDS and all(
        key.endswith(b"}:born") for key in shard_keys
    )
    for mark in [f"{crawl_keys(crawl_name)}:born".encode(), *shard_keys]:
        assert client.get(mark) == b"complete" and client.ttl(mark) > 0, mark


def test_workers_killed_at_five_random_moments_lose_nothing(
    web: TestWeb, postgres_database: Database, crawl_name: str, tmp_path: Path
) -> None:
    seed = random.randrange(1_000_000)
    rng = random.Random(seed)
    web.clear()
    settings = _shared(
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
    _finish(all_workers, logs)

    rows = _rows_by_path(postgres_database, web, "killable")
    assert rows.keys() == _page_paths(300), f"seed {seed}"
    assert _statuses_are_a_whole_crawls(rows)
    fetched = Counter(entry.path for entry in web.log("killable") if entry.path != "/robots.txt")
    duplicates = sum(n - 1 for n in fetched.values())
    assert sum(leases_at_kills) > 0, "no kill happened while work was leased"
    print(f"seed {seed}: {duplicates} duplicate fetches, leases outstanding at the kills {leases_at_kills}")
    assert duplicates <= sum(leases_at_kills), (seed, duplicates, leases_at_kills)


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
    settings = _shared(crawl_name, CRAWLER_LEASE_SECONDS=lease, CRAWLER_BATCH_SECONDS="0.2")
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
    _finish([stopped, other], logs)
    starts = sorted(entry.start for entry in web.log("stoppable"))
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert min(gaps) >= 0.2 - TOLERANCE, sorted(gaps)[:5]  # Crawl-delay 0.2, whoever sent them
    assert _rows_by_path(postgres_database, web, "stoppable").keys() == _page_paths(200)


def test_a_flushed_frontier_stops_every_worker_with_its_own_status(
    web: TestWeb, database: Database, crawl_name: str, tmp_path: Path
) -> None:
    server = ThrowawayRedis(tmp_path / "redis", persistent=False)
    settings = _shared(crawl_name, server.url)  # leases of 120 s, which nothing may be left holding
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
        _finish(
            [start_crawl("links", database, again, url=web.url("shared"), settings=settings)],
            [again],
        )
    finally:
        server.stop()
    served = Counter(entry.path for entry in web.log("shared") if entry.path != "/robots.txt")
    assert served.keys() == _page_paths(150) - {"/private/page"} and max(served.values()) == 1  # robots.txt refuses it
    assert _rows_by_path(database, web, "shared").keys() == _page_paths(150)
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
        settings = _shared(crawl_name, server.url, CRAWLER_REDIS_TIMEOUT="1")
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
        outputs = _finish(workers, logs)
    finally:
        server.stop()
    assert any("Redis unavailable" in output for output in outputs)
    assert any("Redis available again" in output for output in outputs)
    assert len(web.log("shared")) > stopped_at + 20  # the crawl went on afterwards
    rows = _rows_by_path(database, web, "shared")
    assert rows.keys() == _page_paths(150)
    assert _statuses_are_a_whole_crawls(rows)


def test_without_redis_url_the_frontier_stays_in_the_process(web: TestWeb, database: Database) -> None:
    web.clear()
    result = crawl("links", database, url=web.url("fast"))
    assert "Shared crawl" not in result.stderr
    assert len(database.pages()) == 42


def _scrapy(*args: str, redis_url: str = REDIS_URL) -> str:
    command = [sys.executable, "-m", "scrapy", *args, "-L", "WARNING"]
    env = {**crawl_environment(), "REDIS_URL": redis_url}
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_seeds_pushed_into_a_crawl_whose_worker_started_without_any(
    web: TestWeb, database: Database, crawl_name: str, tmp_path: Path
) -> None:
    web.clear()
    assert f"crawl {crawl_name}: 1 seeds queued, 0 already seen" in _scrapy(
        "seed", "links", web.url("fast"), "--crawl", crawl_name
    )
    assert f"crawl {crawl_name}: 0 seeds queued, 1 already seen" in _scrapy(
        "seed", "links", web.url("fast"), "--crawl", crawl_name
    )
    shown = _scrapy("frontier", crawl_name)
    assert f"crawl {crawl_name}: 1 queued, 0 waiting to retry, 0 leased" in shown
    domain = web.url("fast").split("//")[1].rstrip("/")
    (row,) = [line.split() for line in shown.splitlines() if line.startswith(domain)]
    assert row[1] == "1"  # one queued request for the domain
    listed = _scrapy("frontier")
    assert f"crawl {crawl_name}: 1 queued, 0 waiting to retry, 0 leased" in listed
    assert f"  1 domains, 1 ready now, 0 blocked; most queued: {domain} (1)" in listed
    assert listed.endswith("scrapy frontier CRAWL shows every domain of one crawl\n")
    log = tmp_path / "worker.log"
    worker = start_crawl(
        "links", database, log, settings={"REDIS_URL": REDIS_URL, "CRAWLER_IDLE_CLOSE_SECONDS": "3"}, crawl=crawl_name
    )
    _finish([worker], [log])
    assert len(database.pages()) == 42  # the seed's site is in the worker's scope
    assert crawl_name not in _scrapy("frontier")  # complete, and cleared


def test_an_unreadable_request_in_the_frontier_becomes_an_error_row(
    web: TestWeb, database: Database, crawl_name: str, tmp_path: Path
) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    url = web.url("fast", "/p/1")
    assert "1 seeds queued" in _scrapy("seed", "links", url, "--crawl", crawl_name)
    (key,) = [key for key in client.scan_iter(match=shard_pattern(crawl_keys(crawl_name))) if b"}:q:" in key]
    client.lset(key, 0, url.encode() + b"\t{not json")  # what a bad writer could leave
    log = tmp_path / "worker.log"
    worker = start_crawl(
        "links", database, log, settings={"REDIS_URL": REDIS_URL, "CRAWLER_IDLE_CLOSE_SECONDS": "1"}, crawl=crawl_name
    )
    (output,) = _finish([worker], [log])
    assert "Dropping an unreadable request from the shared frontier" in output
    row = database.pages()[url]
    assert row["status"] == "error" and row["error"].startswith("unreadable in the shared frontier")


def test_a_page_of_ten_thousand_links_holds_its_domain_in_no_process(
    web: TestWeb, database: Database, crawl_name: str, tmp_path: Path
) -> None:
    # The site's general index (/index, its second page) links to 5,000 pages twice each; three
    # processes share the crawl, at a Crawl-delay of 0.25 s.
    delay = 0.25
    web.clear()
    settings = _shared(crawl_name, CLOSESPIDER_TIMEOUT="8")
    logs = [tmp_path / f"worker-{n}.log" for n in range(3)]
    workers = [start_crawl("links", database, log, url=web.url("indexed"), settings=settings) for log in logs]
    outputs = finish_all(workers, logs, 60)
    for worker, output in zip(workers, outputs):
        assert worker.returncode == 0 and "Traceback" not in output, output[-5000:]
    served = sorted(web.log("indexed"), key=lambda entry: entry.start)
    (index,) = [n for n, entry in enumerate(served) if entry.path == "/index"]
    after = served[index : index + 11]
    assert len(after) == 11, "the crawl ended too soon after the index"
    # While one process extracts the index's links and queues them, the others go on: no gap
    # after it longer than twice the delay (a busy process holding the domain's slot made
    # gaps of several delays).
    longest = max(b.start - a.start for a, b in zip(after, after[1:]))
    assert longest < 2 * delay, [(entry.path, round(entry.start - served[index].start, 3)) for entry in after]

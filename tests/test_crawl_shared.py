"""Several ``scrapy crawl`` processes sharing one frontier through Redis, as users scale: the
same command started N times, seeds pushed into a running crawl, a page of many links, an
unreadable entry in the frontier. Asserted from the server's own request log and the rows.
Workers killed, stopped and continued, and Redis flushed or away are in
``test_crawl_shared_faults.py`` and ``test_crawl_shared_stopped.py``."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import redis

from crawler import settings as default_settings
from crawler.redis.shards import shard_pattern
from tests.conftest import REDIS_URL
from tests.helpers import ROOT, Database, crawl, crawl_environment, crawl_keys, finish_all, start_crawl
from tests.shared_crawls import TOLERANCE, finish_cleanly, page_paths, rows_by_path, shared_settings
from tests.testweb import TestWeb

pytestmark = pytest.mark.integration


def test_the_same_command_three_times_is_one_polite_crawl(
    web: TestWeb, database: Database, crawl_name: str, tmp_path: Path
) -> None:
    web.clear()
    logs = [tmp_path / f"worker-{n}.log" for n in range(3)]
    workers = [
        start_crawl("links", database, log, url=web.url("shared"), settings=shared_settings(crawl_name)) for log in logs
    ]
    finish_cleanly(workers, logs)
    log = web.log("shared")
    fetched = Counter(entry.path for entry in log)
    assert fetched["/robots.txt"] == 1 and fetched["/"] == 1  # seeds and robots.txt once for all
    assert [path for path, n in fetched.items() if n > 1] == []
    starts = sorted(entry.start for entry in log)
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert min(gaps) >= 0.05 - TOLERANCE, sorted(gaps)[:5]  # Crawl-delay 0.05, across the processes
    rows = rows_by_path(database, web, "shared")
    assert rows.keys() == page_paths(150)
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
    finish_cleanly([worker], [log])
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
    (output,) = finish_cleanly([worker], [log])
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
    settings = shared_settings(crawl_name, CLOSESPIDER_TIMEOUT="8")
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

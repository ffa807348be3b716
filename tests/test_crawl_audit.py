"""``scrapy audit`` against what the site saw. A crawl shared by two processes of a site with
``Crawl-delay: 0.5`` is judged polite, every request recorded with the delay that spaced it. A
crawl whose rows say a longer delay than the one it kept is reported gap by gap, exactly as the
test web's own log of arrivals judges it. The HTML report opens in Chromium."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
import redis

from crawler.redis.keys import delete_matching
from tests.api_server import migrate
from tests.conftest import REDIS_URL, _fresh_database
from tests.helpers import (
    ROOT,
    Database,
    crawl_environment,
    crawl_keys,
    finish_all,
    scrapy_command,
    start_crawl,
    wait_until,
)
from tests.testweb import TestWeb
from tests.testweb.control import LoggedRequest

pytestmark = pytest.mark.integration

TOLERANCE = 0.010
"""The audit's default: seconds a gap may fall short of its delay."""

SITES = {"audited": "paced:crawl_delay=0.5,pages=16"}


@pytest.fixture(scope="module")
def site() -> Iterator[TestWeb]:
    """A test web of this module's own: its hosts' request logs hold this module's crawls only."""
    with TestWeb(SITES, first_address=60) as web:
        yield web


def audit(database: Database, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``scrapy audit ARGUMENTS`` on ``database``, as an operator runs it."""
    return subprocess.run(
        scrapy_command("audit", *arguments, settings={"DATABASE_URL": database.url}),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=crawl_environment(),
    )


@dataclass(frozen=True)
class SharedCrawl:
    database: Database
    served: list[LoggedRequest]
    """The test web's log of the host, by start."""
    logged: dict[str, tuple[float, str]]
    """The request log of the host: the delay in force and the job of each URL."""


@pytest.fixture(scope="module")
def shared_crawl(site: TestWeb, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedCrawl]:
    """Two processes of one shared crawl at the default delay of 1 s on a site whose robots.txt
    says 0.5 s. The crawl is paused until both run, so that both send pages (a lone domain's
    requests handed out ahead of their slots would all go to one process: no lead)."""
    tmp_path = tmp_path_factory.mktemp("shared-audit")
    crawl_name = f"test-{uuid.uuid4().hex[:12]}"
    settings = {
        "REDIS_URL": REDIS_URL,
        "CRAWLER_CRAWL_ID": crawl_name,
        "CRAWLER_IDLE_CLOSE_SECONDS": "1",
        "CRAWLER_CONTROL_POLL_SECONDS": "0.2",
        "CRAWLER_HEARTBEAT_SECONDS": "0.2",
        "CRAWLER_DEFAULT_DELAY": "1.0",
        "CONCURRENT_REQUESTS_PER_DOMAIN": "2",
        "CRAWLER_HANDOUT_LEAD_SECONDS": "0",
    }
    with _fresh_database("postgresql", tmp_path) as database:
        migrate(database)
        database.query(
            "INSERT INTO domain_controls (domain, paused, updated_by, updated_at) "
            "VALUES ('*', TRUE, 'test', ?) RETURNING domain",
            (datetime.now(UTC).isoformat(),),
        )
        jobs = [f"audited-{n}" for n in range(2)]
        logs = [tmp_path / f"{job}.log" for job in jobs]
        workers = [
            start_crawl("links", database, log, url=site.url("audited"), job_id=job, settings=settings)
            for job, log in zip(jobs, logs)
        ]
        try:
            wait_until(
                lambda: sorted(database.query("SELECT state FROM workers")) == [("paused",), ("paused",)],
                timeout=120,
                what="both processes running",
            )
            database.query("DELETE FROM domain_controls WHERE domain = '*' RETURNING domain")
            outputs = finish_all(workers, logs, timeout=120)
        finally:
            finish_all(workers, logs, timeout=0)  # whatever failed, none outlives the test
            delete_matching(redis.Redis.from_url(REDIS_URL), crawl_keys(crawl_name) + ":*")
        for worker, output in zip(workers, outputs):
            assert worker.returncode == 0 and "Traceback" not in output, output[-5000:]
        rows = database.query("SELECT url, delay_in_force, job_id FROM request_log")
        yield SharedCrawl(
            database,
            sorted(site.log("audited"), key=lambda entry: entry.start),
            {url.removeprefix(site.base("audited")): (delay, job) for url, delay, job in rows},
        )


def test_every_request_of_a_shared_crawl_records_the_delay_that_spaced_it(shared_crawl: SharedCrawl) -> None:
    logged = shared_crawl.logged
    assert sorted(logged) == sorted(entry.path for entry in shared_crawl.served)
    assert {job for path, (_, job) in logged.items() if path != "/robots.txt"} == {"audited-0", "audited-1"}
    # robots.txt left at the default delay; every page after it at robots.txt's, in both processes
    assert {path: delay for path, (delay, _) in logged.items() if delay != 0.5} == {"/robots.txt": 1.0}


def test_the_audit_of_a_polite_shared_crawl_reports_no_short_gap(shared_crawl: SharedCrawl, site: TestWeb) -> None:
    starts = [entry.start for entry in shared_crawl.served]
    assert min(b - a for a, b in zip(starts, starts[1:])) >= 0.5 - TOLERANCE  # what the site saw
    result = audit(shared_crawl.database, site.base("audited").removeprefix("http://"), "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    assert summary["requests"] == len(shared_crawl.served)
    assert (summary["gaps_under_delay"], summary["gaps_under_delay_listed"]) == (0, [])

"""Seeing and steering running crawls, asserted from the test web's own request log and the
rows: heartbeats, stats samples, domain state and the request log written during a crawl;
a domain paused, a URL taken from the inbox, a domain reset, the whole crawl paused and the
job cancelled by operators; a per-domain override obeyed by two shared processes; the audit
matching the server's log."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis

from crawler import exitcodes
from crawler.control.site_audit import LoggedRequest as AuditedRequest
from crawler.control.site_audit import max_in_flight
from tests.api_server import migrate
from tests.conftest import REDIS_URL, _fresh_database
from tests.helpers import ROOT, Database, crawl_environment, finish_all, forget_crawl, start_crawl
from tests.testweb import TestWeb
from tests.testweb.control import LoggedRequest

pytestmark = pytest.mark.integration

TOLERANCE = 0.010


def _wait_for(condition: Callable[[], object], timeout: float = 30, what: str | Callable[[], str] = "") -> None:
    """Wait for ``condition``; ``what`` names it in the failure (a function: read at that moment)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what() if callable(what) else what}"
        time.sleep(0.1)


def _finish(worker: subprocess.Popen[bytes], log: Path, timeout: float = 60, status: int = 0) -> str:
    try:
        worker.wait(timeout=timeout)
    finally:
        if worker.poll() is None:
            worker.kill()  # our own process, by its PID
            worker.wait()
    output = log.read_text(errors="replace")
    assert worker.returncode == status, output[-5000:]
    assert "Traceback" not in output, output[-5000:]
    return output


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _host(web: TestWeb, label: str) -> str:
    return web.base(label).split("//")[1]


def test_a_job_whose_page_budget_is_spent_leaves_the_inbox_s_urls_for_another(
    web: TestWeb, database: Database, tmp_path: Path
) -> None:
    web.clear()
    settings = {"CRAWLER_DEFAULT_DELAY": "0.3", "CRAWLER_CONTROL_POLL_SECONDS": "0.2"}
    # The home page's links take the whole budget at once; fetching it takes a few seconds.
    worker = start_crawl(
        "links",
        database,
        tmp_path / "crawl.log",
        url=web.url("steered"),
        job_id="budgeted",
        max_pages="8",
        settings=settings,
    )
    try:
        _wait_for(lambda: len(web.log("steered")) >= 3, what="the crawl")
        database.query(
            "INSERT INTO frontier_inbox (url, added_by, added_at) VALUES (?, 'test', ?) RETURNING id",
            (web.url("steered", "/p/250"), _now()),
        )
        assert worker.wait(60) == 0
    finally:
        finish_all([worker], [], 10)
    assert database.query("SELECT taken_at FROM frontier_inbox") == [(None,)]
    assert "/p/250" not in {e.path for e in web.log("steered")}


def _worker_running(database: Database, job: str) -> bool:
    try:
        return bool(database.query("SELECT 1 FROM workers WHERE job_id = ?", (job,)))
    except Exception:  # the tables are not there yet
        return False


def test_operators_pause_a_domain_seed_a_url_and_cancel_the_job(
    web: TestWeb, database: Database, tmp_path: Path
) -> None:
    web.clear()
    steered, inbox = _host(web, "steered"), _host(web, "inbox")
    settings = {
        "CRAWLER_DEFAULT_DELAY": "0.2",
        "CRAWLER_HEARTBEAT_SECONDS": "0.5",
        "CRAWLER_CONTROL_POLL_SECONDS": "0.2",
        # URLs seeded through the API pass the address guard as links do: the operator allows
        # the inbox's host; another loopback host seeded the same way stays refused.
        "CRAWLER_ALLOWED_NETWORKS": f"{inbox.split(':')[0]}/32",
    }
    refused = web.url("limited", "/p/1")
    log = tmp_path / "crawl.log"
    worker = start_crawl("links", database, log, url=web.url("steered"), job_id="steered", settings=settings)
    try:
        _wait_for(lambda: _worker_running(database, "steered") and len(web.log("steered")) >= 3, what="the crawl")
        database.query(
            "INSERT INTO domain_controls (domain, paused, updated_by, updated_at) VALUES (?, TRUE, 'test', ?) RETURNING domain",
            (steered, _now()),
        )
        database.query(
            "INSERT INTO frontier_inbox (url, added_by, added_at) VALUES (?, 'test', ?) RETURNING id",
            (web.url("inbox", "/p/1"), _now()),
        )
        database.query(
            "INSERT INTO frontier_inbox (url, added_by, added_at) VALUES (?, 'test', ?) RETURNING id", (refused, _now())
        )
        _wait_for(lambda: "Domain controls applied" in log.read_text(errors="replace"), what="the pause")
        paused_at = time.time()
        _wait_for(lambda: "/p/1" in {e.path for e in web.log("inbox")}, what="the URL from the inbox")
        time.sleep(1.0)
        sent_while_paused = [
            e for e in web.log("steered") if e.start > paused_at + 0.3
        ]  # one handed out already may leave
        assert sent_while_paused == []
        database.query(
            "UPDATE domain_controls SET reset_requested_at = ? WHERE domain = ? RETURNING domain", (_now(), steered)
        )
        _wait_for(
            lambda: f"Pacing of {steered} reset by an operator" in log.read_text(errors="replace"), what="the reset"
        )
        database.query(
            "INSERT INTO domain_controls (domain, paused, updated_by, updated_at) VALUES ('*', TRUE, 'test', ?) RETURNING domain",
            (_now(),),
        )
        _wait_for(
            lambda: database.query("SELECT state FROM workers WHERE job_id = 'steered'") == [("paused",)],
            what="the whole crawl's pause",
        )
        database.query("UPDATE crawl_jobs SET cancel_requested_at = ? WHERE id = 'steered' RETURNING id", (_now(),))
    finally:
        _finish(worker, log, status=exitcodes.STOPPED)  # a cancelled job
    ((status, reason),) = database.query("SELECT status, finish_reason FROM crawl_jobs WHERE id = 'steered'")
    assert (status, reason) == ("stopped", "cancelled")
    skipped = database.query("SELECT COUNT(*) FROM pages WHERE status = 'skipped' AND domain = ?", (steered,))[0][0]
    assert skipped > 0
    assert {taken_by.split(":")[-1] for (taken_by,) in database.query("SELECT taken_by FROM frontier_inbox")} == {
        "steered"
    }
    ((status, error),) = database.query("SELECT status, error FROM pages WHERE url = ?", (refused,))
    assert status == "blocked_by_policy" and "loopback" in error, error
    assert web.log("limited") == []  # not even its robots.txt
    # What the process reported about itself
    ((state, stats),) = database.query("SELECT state, stats FROM workers WHERE job_id = 'steered'")
    assert state == "finished" and json.loads(stats)["response_received_count"] > 0
    assert json.loads(stats)["control/domain_reset_count"] == 1
    samples = [json.loads(stats) for (stats,) in database.query("SELECT stats FROM stats_samples ORDER BY sampled_at")]
    assert any(sample.get("frontier/queued", 0) > 0 for sample in samples)
    assert database.query("SELECT adaptive_delay_seconds FROM domains WHERE domain = ?", (steered,)) == [(0,)]
    assert database.query("SELECT COUNT(*) FROM stats_samples WHERE job_id = 'steered'")[0][0] >= 3
    served = web.log("steered")
    state_rows = dict(database.query("SELECT domain, pages FROM domain_state"))
    assert state_rows.keys() == {steered, inbox}
    assert state_rows[steered] == len(served)
    logged = database.query("SELECT url, delay_in_force, http_status FROM request_log WHERE domain = ?", (steered,))
    assert sorted(url.removeprefix(web.base("steered")) for url, _, _ in logged) == sorted(e.path for e in served)
    assert {round(delay, 6) for _, delay, _ in logged} == {0.2}
    assert {status for _, _, status in logged} == {200}


@dataclass(frozen=True)
class OverriddenCrawl:
    served: list[LoggedRequest]
    """The test web's log of the host, by start."""
    sent: list[AuditedRequest]
    """The crawler's request log of the host, by start."""
    jobs: set[str]
    samples: list[dict[str, Any]]
    """The stats samples of both processes."""
    audit: dict[str, Any]
    """``scrapy audit HOST --json``."""


@pytest.fixture(scope="module")
def overridden_crawl(web: TestWeb, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OverriddenCrawl]:
    """Two shared processes crawling a host overridden to 4 at once and 0.1 s (given as the
    bare host: it matches any port), where the test settings allow 8 at once and no delay.

    The crawl is paused by an operator until both processes run: on a loaded machine the
    second one can take longer to start than the first one takes to crawl the host."""
    web.clear()
    tmp_path = tmp_path_factory.mktemp("overridden")
    crawl_name = f"test-{uuid.uuid4().hex[:12]}"
    settings = {
        "REDIS_URL": REDIS_URL,
        "CRAWLER_CRAWL_ID": crawl_name,
        "CRAWLER_IDLE_CLOSE_SECONDS": "1",
        "CRAWLER_DOMAIN_OVERRIDES": json.dumps({web.addresses["overridden"]: {"concurrency": 4, "min_delay": 0.1}}),
        "CRAWLER_CONTROL_POLL_SECONDS": "0.2",
        "CRAWLER_HEARTBEAT_SECONDS": "0.2",
        # Handed out ahead of their slots, a lone domain's requests all go to the process that
        # holds its slots already. Without the lead, the frontier's turns share a domain at its
        # concurrency between the processes asking; one paced by its delay alone stays with
        # whichever process asks first at each slot, most often the one that sent the last.
        "CRAWLER_HANDOUT_LEAD_SECONDS": "0",
    }
    with _fresh_database("postgresql", tmp_path) as database:
        migrate(database)
        database.query(
            "INSERT INTO domain_controls (domain, paused, updated_by, updated_at) VALUES ('*', TRUE, 'test', ?) RETURNING domain",
            (_now(),),
        )
        jobs = [f"overridden-{n}" for n in range(2)]
        logs = [tmp_path / f"{job}.log" for job in jobs]
        workers: list[subprocess.Popen[bytes]] = []
        try:
            for job, log in zip(jobs, logs):
                workers.append(
                    start_crawl("links", database, log, url=web.url("overridden"), job_id=job, settings=settings)
                )
            _wait_for(
                lambda: sorted(database.query("SELECT state FROM workers")) == [("paused",), ("paused",)],
                timeout=120,
                what=lambda: (
                    "both processes paused; their logs: "
                    + " | ".join(log.read_text(errors="replace")[-2000:] for log in logs)
                ),
            )
            database.query("DELETE FROM domain_controls WHERE domain = '*' RETURNING domain")
            for worker, log in zip(workers, logs):
                _finish(worker, log, timeout=120)
        finally:
            finish_all(workers, logs, timeout=0)  # whatever failed, none outlives the test
            forget_crawl(redis.Redis.from_url(REDIS_URL), crawl_name)
        rows = database.query("SELECT url, started_at, ended_at, job_id FROM request_log ORDER BY started_at")
        samples = [json.loads(stats) for (stats,) in database.query("SELECT stats FROM stats_samples")]
        audit = subprocess.run(
            [
                sys.executable,
                "-m",
                "scrapy",
                "audit",
                _host(web, "overridden"),
                "--json",
                "-s",
                f"DATABASE_URL={database.url}",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env=crawl_environment(),
        )
    assert audit.returncode == 0, audit.stderr[-3000:]
    yield OverriddenCrawl(
        served=sorted(web.log("overridden"), key=lambda e: e.start),
        sent=[
            AuditedRequest(url, started.timestamp(), ended.timestamp(), None, "", None)
            for url, started, ended, _ in rows
        ],
        jobs={job for *_, job in rows},
        samples=samples,
        audit=json.loads(audit.stdout),
    )


def test_an_override_is_obeyed_by_two_shared_processes(overridden_crawl: OverriddenCrawl) -> None:
    served, sent = overridden_crawl.served, overridden_crawl.sent
    assert len(served) == len(sent) == 1 + 1 + 40  # robots.txt, / and /p/0 … /p/39 (/private is disallowed)
    assert len(overridden_crawl.jobs) == 2  # both processes sent requests
    assert any(
        "frontier/lease_reclaimed" in sample for sample in overridden_crawl.samples
    )  # the shared frontier's figures
    # Every start spaced from the one before as the crawler sent them, never over 4 at once.
    assert min(b.started - a.started for a, b in zip(sent, sent[1:])) >= 0.1 - TOLERANCE
    assert max_in_flight(sent)[0] <= 4
    server_side = max_in_flight([AuditedRequest(e.path, e.start, e.end, e.status, "", None) for e in served])[0]
    assert 2 <= server_side <= 4  # 8 at once without the override


def test_the_audit_counts_what_the_site_saw(overridden_crawl: OverriddenCrawl, web: TestWeb) -> None:
    audit = overridden_crawl.audit
    assert audit["requests"] == len(overridden_crawl.served)
    assert audit["gaps_under_delay"] == 0 and 2 <= audit["max_in_flight"] <= 4
    private = {
        "allowed": False,
        "rule": "Disallow: /private",
        "decisions": 1,
        "example": web.url("overridden", "/private/page"),
    }
    assert private in audit["robots"]


def test_the_site_sees_no_gap_under_the_override_delay_and_the_audit_agrees(overridden_crawl: OverriddenCrawl) -> None:
    starts = [e.start for e in overridden_crawl.served]
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert min(gaps) >= 0.1 - TOLERANCE, sorted(gaps)[:5]
    assert abs(overridden_crawl.audit["smallest_gap"]["seconds"] - min(gaps)) <= TOLERANCE

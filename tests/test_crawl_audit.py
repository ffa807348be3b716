"""``scrapy audit`` against what the site saw. A crawl shared by two processes of a site with
``Crawl-delay: 0.5`` is judged polite, every request recorded with the delay that spaced it. A
crawl whose rows say a longer delay than the one it kept is reported gap by gap, exactly as the
test web's own log of arrivals judges it. The HTML report opens in Chromium (a screenshot in
tests/output/audit-report.png)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, expect

from tests.api_server import migrate
from tests.conftest import REDIS_URL, _fresh_database
from tests.helpers import (
    ROOT,
    Database,
    crawl,
    finish_all,
    forget_crawl,
    run_scrapy,
    start_crawl,
    wait_until,
)
from tests.testweb import TestWeb
from tests.testweb.control import LoggedRequest

pytestmark = pytest.mark.integration

TOLERANCE = 0.010
"""The audit's default: seconds a gap may fall short of its delay."""

SITES = {"audited": "paced:crawl_delay=0.5,pages=16", "paced": "paced:pages=30"}

OUTPUT = ROOT / "tests" / "output"


@pytest.fixture(scope="module")
def site() -> Iterator[TestWeb]:
    """A test web of this module's own: its hosts' request logs hold this module's crawls only."""
    with TestWeb(SITES, first_address=60) as web:
        yield web


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
            forget_crawl(redis.Redis.from_url(REDIS_URL), crawl_name)
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
    result = run_scrapy(shared_crawl.database, "audit", site.base("audited").removeprefix("http://"), "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    assert summary["requests"] == len(shared_crawl.served)
    assert (summary["gaps_under_delay"], summary["gaps_under_delay_listed"]) == (0, [])


@dataclass(frozen=True)
class ShortGapCrawl:
    database: Database
    served: list[LoggedRequest]
    """The test web's log of the host, by start."""
    delays: dict[str, float]
    """The delay each URL's row says was in force when it left."""


@pytest.fixture(scope="module")
def short_gap_crawl(site: TestWeb, tmp_path_factory: pytest.TempPathFactory) -> ShortGapCrawl:
    """A crawl kept 0.2 s between requests; then its rows are made to say what a crawler that
    ignored its delay would have recorded: 1 s in force when every third request left (from the
    third on), 0.1 s when the others did. Exactly the gaps before those requests are short: an
    impolite crawl whose delays in force are known."""
    database = Database(f"sqlite:///{tmp_path_factory.mktemp('short-gaps') / 'crawler.db'}")
    crawl("links", database, url=site.url("paced"), settings={"CRAWLER_DEFAULT_DELAY": "0.2"})
    urls = [url for (url,) in database.query("SELECT url FROM request_log ORDER BY started_at")]
    delays = {url: 1.0 if n % 3 == 2 else 0.1 for n, url in enumerate(urls)}
    for url, delay in delays.items():
        database.query("UPDATE request_log SET delay_in_force = ? WHERE url = ? RETURNING url", (delay, url))
    base = site.base("paced")
    served = sorted(site.log("paced"), key=lambda entry: entry.start)
    return ShortGapCrawl(database, served, {url.removeprefix(base): delay for url, delay in delays.items()})


def test_every_short_gap_of_an_impolite_crawl_is_reported_as_the_site_saw_it(
    short_gap_crawl: ShortGapCrawl, site: TestWeb
) -> None:
    served, delays = short_gap_crawl.served, short_gap_crawl.delays
    assert sorted(delays) == sorted(entry.path for entry in served)
    # The site's own judge: consecutive arrivals closer than the delay the second one's row gives.
    seen_short = [
        (a.path, b.path) for a, b in zip(served, served[1:]) if b.start - a.start < delays[b.path] - TOLERANCE
    ]
    result = run_scrapy(
        short_gap_crawl.database, "audit", site.addresses["paced"], "--json"
    )  # the host without its port
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    base = site.base("paced")
    reported = [
        (gap["after"].removeprefix(base), gap["before"].removeprefix(base))
        for gap in summary["gaps_under_delay_listed"]
    ]
    assert seen_short and reported == seen_short
    assert summary["gaps_under_delay"] == len(seen_short)
    assert summary["requests"] == len(served)


def test_the_html_report_opens_in_a_browser_and_draws_every_gap(
    short_gap_crawl: ShortGapCrawl, site: TestWeb, browser: Browser, tmp_path: Path
) -> None:
    page_file = tmp_path / "audit.html"
    result = run_scrapy(short_gap_crawl.database, "audit", site.addresses["paced"], "--html", str(page_file), "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    short = json.loads(result.stdout)["gaps_under_delay"]
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type in ("error", "warning") else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    page.goto(page_file.as_uri())
    expect(page.locator("svg.plot.gaps")).to_be_visible()
    expect(page.locator("svg.plot.requests")).to_be_visible()
    requests = len(short_gap_crawl.served)
    expect(page.locator("svg.gaps circle.gap")).to_have_count(requests - 1)
    expect(page.locator("svg.gaps circle.gap.short")).to_have_count(short)
    assert short > 0
    expect(page.locator("svg.gaps path.delay")).to_have_count(1)
    assert page.locator("svg.requests rect.bar").count() >= 1
    expect(page.locator("dl.findings")).to_contain_text(f"gaps shorter than the delay (tolerance 0.010 s){short}")
    expect(page.locator("section.domain h2")).to_have_text(site.base("paced").removeprefix("http://"))
    OUTPUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUTPUT / "audit-report.png"), full_page=True)
    page.close()
    assert problems == [] and fetched == [page_file.as_uri()]

"""The dashboard in headless Chromium beside a real crawl: two processes of one shared crawl
(PostgreSQL and Redis) of two endless sites of the test web, after a smaller crawl that ended.

After the first 30 s the dashboard's figures are the workers' own: pages/s against the rate
Scrapy logs in each process, pages fetched and each job's pages against the processes'
heartbeat stats in the database. The crawl shown is the one running, the ended process is
folded away, times read "12 s ago" with the exact time on hover, the chart's scale holds, and
the page reports no error. Once the processes stop, each job shows the count its row keeps,
which is the figure its heartbeats gave. A screenshot taken during the crawl is saved in
tests/output/."""

from __future__ import annotations

import json
import re
import shutil
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from crawler.storage.jobs import pages_in_stats
from tests.api_server import ServeProcess, create_users, migrate
from tests.browser import OUTPUT, chromium, log_in, next_refresh
from tests.conftest import REDIS_URL
from tests.helpers import Database, finish_all, logged_rate, start_crawl, wait_until
from tests.testweb import TestWeb

pytestmark = pytest.mark.integration

SETTLED = 30.0
"""Seconds of crawl before the figures are compared."""
DELAY = "0.25"
"""Seconds between two requests to a site: 8 pages/s over the two sites."""
PAGES = "response_received_count"
SHOWN = """(jobs) => ({
    rate: document.querySelector("#rate").textContent,
    fetched: document.querySelector("#fetched").textContent,
    scale: document.querySelector("#chart text.scale").textContent,
    jobs: Object.fromEntries(jobs.map((job) => [job, document.querySelector(`#jobs tr[data-job="${job}"] td.pages`).textContent])),
})"""
"""What the dashboard shows, read at once (between two refreshes)."""


def _heartbeats(database: Database, crawl: str) -> dict[str, dict[str, Any]]:
    """The latest heartbeat stats of the processes of ``crawl``, by job."""
    rows = database.query("SELECT job_id, stats FROM workers WHERE crawl_id = ?", (crawl,))
    return {job: json.loads(stats) for job, stats in rows}


def _number(text: str) -> int:
    return int(re.sub(r"\D", "", text))


def _scale(shown: dict[str, Any]) -> float:
    return float(re.match(r"top: ([\d.]+) pages/s", shown["scale"]).group(1))


def _times_are_relative_with_the_exact_one_on_hover(page: Page, selector: str) -> None:
    cells = page.locator(selector)
    assert cells.count() > 0, selector
    for index in range(cells.count()):
        assert re.fullmatch(r"\d+ (s|min) ago", cells.nth(index).text_content()), selector
        assert str(datetime.now().year) in cells.nth(index).get_attribute("title"), selector


def test_the_dashboard_shows_the_figures_of_the_crawl_running(
    web: TestWeb, postgres_database: Database, crawl_name: str, tmp_path: Path
) -> None:
    database = postgres_database
    migrate(database)
    create_users(database)
    earlier_log, logs = tmp_path / "earlier.log", [tmp_path / f"worker-{n}.log" for n in range(2)]
    earlier = start_crawl("links", database, earlier_log, url=web.url("inbox"))
    server = ServeProcess(database, tmp_path / "serve.log", {"REDIS_URL": REDIS_URL})
    settings = {"REDIS_URL": REDIS_URL, "CRAWLER_CRAWL_ID": crawl_name, "CRAWLER_DEFAULT_DELAY": DELAY}
    seeds = f"{web.url('endless-a')},{web.url('endless-b')}"
    workers = [start_crawl("links", database, log, url=seeds, settings=settings) for log in logs]
    try:
        with chromium() as browser:
            page, errors = log_in(browser, server, "admin")
            finish_all([earlier], [earlier_log], 60)
            wait_until(lambda: len(_heartbeats(database, crawl_name)) == 2, 60, "both processes' first heartbeat")
            jobs = sorted(_heartbeats(database, crawl_name))
            time.sleep(SETTLED)

            next_refresh(page)
            before = _heartbeats(database, crawl_name)
            next_refresh(page)  # its requests left after ``before`` was read
            shown = page.evaluate(SHOWN, jobs)
            after = _heartbeats(database, crawl_name)
            logged = sum(logged_rate(log) for log in logs)
            shot = tmp_path / "dashboard-crawl.png"
            page.screenshot(path=str(shot), full_page=True)
            OUTPUT.mkdir(exist_ok=True)
            shutil.copy(shot, OUTPUT / shot.name)
            print(f"screenshot: {OUTPUT / shot.name}; shown {shown}; Scrapy logged {logged:.2f} pages/s")

            assert logged > 1.0, "the crawl hardly runs"
            assert float(shown["rate"]) == pytest.approx(logged, rel=0.10)
            fetched = [sum(stats[PAGES] for stats in beats.values()) for beats in (before, after)]
            assert fetched[0] <= _number(shown["fetched"]) <= fetched[1]
            for job in jobs:
                assert pages_in_stats(before[job])[0] <= _number(shown["jobs"][job]) <= pages_in_stats(after[job])[0]
            assert 0 < sum(_number(n) for n in shown["jobs"].values())

            expect(page.locator("#run-state")).to_contain_text(f"{crawl_name}: running, 2 of 2 processes live")
            expect(page.locator("#crawl-choice option")).to_have_count(3)  # the one running, and both crawls
            expect(page.locator("#workers tbody tr")).to_have_count(2)
            expect(page.locator("#workers tbody tr.silent")).to_have_count(0)
            expect(page.locator("#finished-count")).to_have_text("1 finished")
            assert page.locator("#finished").get_attribute("open") is None
            _times_are_relative_with_the_exact_one_on_hover(page, "#workers tbody td:nth-child(7)")
            for job in jobs:
                _times_are_relative_with_the_exact_one_on_hover(page, f'#jobs tr[data-job="{job}"] td:nth-child(3)')

            for worker in workers:
                worker.terminate()  # our own processes, by their PIDs
            for output in finish_all(workers, logs, 60):
                assert "Traceback" not in output, output[-5000:]
            final = dict(database.query("SELECT id, pages_fetched FROM crawl_jobs"))
            beats = _heartbeats(database, crawl_name)
            for job in jobs:
                assert final[job] == pages_in_stats(beats[job])[0] >= _number(shown["jobs"][job])
            next_refresh(page)
            expect(page.locator("#run-state")).to_contain_text(f"{crawl_name}: ended")
            expect(page.locator("#finished-count")).to_have_text("3 finished")
            expect(page.locator("#workers tbody tr")).to_have_count(0)
            for job in jobs:
                expect(page.locator(f'#jobs tr[data-job="{job}"] td.pages')).to_have_text(f"{final[job]:,}")
            assert _scale(shown) <= _scale(page.evaluate(SHOWN, jobs)), "the chart's scale shrank"
            assert errors.found == []
    finally:
        finish_all([earlier, *workers], [earlier_log, *logs], 60)
        server.stop()

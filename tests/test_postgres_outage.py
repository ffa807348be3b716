"""PostgreSQL stopping in the middle of a crawl loses no row."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from crawler import exitcodes
from tests.helpers import FAST, ROOT, Database
from tests.testweb import TestWeb
from tests.throwaway_postgres import ThrowawayPostgres

pytestmark = pytest.mark.integration


@pytest.fixture
def postgres() -> Iterator[ThrowawayPostgres]:
    # Not under pytest's temporary folder: the postgres user must be able to reach it.
    root = Path(tempfile.mkdtemp(prefix="crawler-pg-"))
    server = ThrowawayPostgres(root).init()
    server.start()
    try:
        yield server
    finally:
        try:
            server.stop()
        except subprocess.CalledProcessError:
            pass  # already stopped by the test
        shutil.rmtree(root, ignore_errors=True)


def _start_crawl(web: TestWeb, url: str, tmp_path: Path, **settings: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "scrapy", "crawl", "links", "-a", f"url={web.url('heavy')}"]
    for name, value in {**FAST, "DATABASE_URL": url, "CRAWLER_UNSAVED_ROWS_DIR": str(tmp_path), **settings}.items():
        command += ["-s", f"{name}={value}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)


def _finish(crawl: subprocess.Popen[str], timeout: float = 300, status: int = exitcodes.FINISHED) -> str:
    """Wait for the crawl, which exits with ``status``; a crawl that hangs is stopped (by its
    PID) and fails the test."""
    try:
        _, stderr = crawl.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        crawl.kill()
        _, stderr = crawl.communicate()
        raise AssertionError(f"the crawl did not finish in {timeout} s:\n{stderr[-3000:]}") from None
    assert crawl.returncode == status, stderr[-3000:]
    return stderr


def _rows(url: str) -> int:
    with psycopg.connect(url) as connection:
        return connection.execute("SELECT COUNT(*) FROM pages").fetchone()[0]


def _wait_for_rows(url: str, at_least: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if _rows(url) >= at_least:
                return
        except psycopg.Error:
            pass
        time.sleep(0.2)
    raise AssertionError(f"fewer than {at_least} rows after {timeout} s")


def _requested_pages(web: TestWeb) -> set[str]:
    return {web.url("heavy", e.path) for e in web.log("heavy") if e.path != "/robots.txt"}


def test_ten_seconds_without_postgres_loses_no_row(web: TestWeb, postgres: ThrowawayPostgres, tmp_path: Path) -> None:
    web.clear()
    crawl = _start_crawl(web, postgres.url, tmp_path, CRAWLER_DEFAULT_DELAY="0.05", CONCURRENT_REQUESTS_PER_DOMAIN="1")
    _wait_for_rows(postgres.url, 20)
    postgres.stop()
    time.sleep(10)
    postgres.start()
    stderr = _finish(crawl)
    assert "Could not write rows" in stderr and "Database available again" in stderr
    stored = {url for (url,) in Database(postgres.url).query("SELECT url FROM pages")}
    requested = _requested_pages(web)
    assert len(requested) > 250
    assert stored == requested
    assert not list(tmp_path.glob("unsaved-rows-*.jsonl"))


def test_postgres_gone_for_good_spills_rows_to_a_file(
    web: TestWeb, postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    web.clear()
    crawl = _start_crawl(
        web,
        postgres.url,
        tmp_path,
        CRAWLER_DEFAULT_DELAY="0.02",
        CONCURRENT_REQUESTS_PER_DOMAIN="1",
        CRAWLER_STORAGE_SHUTDOWN_TIMEOUT="3",
        CRAWLER_MAX_PAGES="120",
    )
    _wait_for_rows(postgres.url, 10)
    postgres.stop()
    # Finished, but the rows are in a file, not in the database: cron must hear of it.
    stderr = _finish(crawl, status=exitcodes.DATABASE_UNREACHABLE)
    assert "rows were written to" in stderr
    postgres.start()
    stored = {url for (url,) in Database(postgres.url).query("SELECT url FROM pages")}
    (spill,) = tmp_path.glob("unsaved-rows-*.jsonl")
    spilled = [json.loads(line) for line in spill.read_text().splitlines()]
    spilled_urls = {entry["row"][0] for entry in spilled if entry["table"] == "pages"}
    assert stored.isdisjoint(spilled_urls)
    assert stored | spilled_urls == _requested_pages(web)
    assert len(stored | spilled_urls) == 120


def test_sigterm_during_an_outage_exits_non_zero(web: TestWeb, postgres: ThrowawayPostgres, tmp_path: Path) -> None:
    crawl = _start_crawl(
        web, postgres.url, tmp_path, CRAWLER_DEFAULT_DELAY="0.05", CRAWLER_STORAGE_SHUTDOWN_TIMEOUT="2"
    )
    _wait_for_rows(postgres.url, 10)
    postgres.stop()
    time.sleep(1)
    crawl.send_signal(signal.SIGTERM)
    stderr = _finish(crawl, timeout=60, status=exitcodes.STOPPED)
    assert "rows were written to" in stderr
    assert list(tmp_path.glob("unsaved-rows-*.jsonl"))

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


def _start_crawl(
    web: TestWeb, url: str, tmp_path: Path, seeds: str | None = None, **settings: str
) -> subprocess.Popen[str]:
    """A crawl of the heavy site, or of ``seeds`` (the spider argument: ``url=…`` or
    ``seeds_file=…``)."""
    command = [sys.executable, "-m", "scrapy", "crawl", "links", "-a", seeds or f"url={web.url('heavy')}"]
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


def _fetched_rows(url: str) -> set[str]:
    # (the home page and /p/0 are the same page: one of them is a duplicate row)
    return {url for (url,) in Database(url).query("SELECT url FROM pages WHERE status IN ('fetched', 'duplicate')")}


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


def test_a_recrawl_waits_for_the_database_rather_than_fetch_pages_not_due(
    web: TestWeb, postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    web.clear()
    # The first run stores 50 pages, most of them /p/50 to /p/99, which the second run reaches
    # only through pages it fetches: it looks them up while it crawls, not all at its start. (Its
    # budget may also go to links of the first seeds fetched, taken before the last seeds.)
    seeded = [web.url("budgeted", f"/p/{n}") for n in range(50, 100)]
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("\n".join(seeded) + "\n")
    first = _start_crawl(web, postgres.url, tmp_path, f"seeds_file={seeds}", CRAWLER_MAX_PAGES="50")
    _finish(first, timeout=120)
    known = _fetched_rows(postgres.url)
    assert len(known) == 50 and web.url("budgeted", "/") not in known
    web.clear()
    again = _start_crawl(web, postgres.url, tmp_path, f"url={web.url('budgeted')}", CRAWLER_DEFAULT_DELAY="0.2")
    deadline = time.monotonic() + 60
    while not any(entry.path == "/p/6" for entry in web.log("budgeted")):
        assert time.monotonic() < deadline, "the second run never reached /p/6"
        time.sleep(0.02)
    postgres.stop()  # before the pages that link to the known ones (/p/10 to /p/19) are parsed
    time.sleep(6)
    postgres.start()
    stderr = _finish(again)
    fetched = {web.url("budgeted", entry.path) for entry in web.log("budgeted") if entry.path != "/robots.txt"}
    assert fetched.isdisjoint(known), sorted(fetched & known)  # not due: none fetched again
    assert "they wait for the database" in stderr and "can be read again" in stderr
    stored = _fetched_rows(postgres.url)
    assert stored == fetched | known and len(stored) == 101  # the home page and /p/0 to /p/99

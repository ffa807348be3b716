"""The exit status of ``scrapy crawl`` and ``./crawl`` says how the job ended, for cron: each case
in a real process, ending within a minute with its status and a one-line reason."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crawler import exitcodes
from tests.conftest import POSTGRES_ADMIN_URL
from tests.helpers import ROOT, Database, crawl_command, crawl_environment, start_crawl
from tests.testweb import TestWeb

LIMIT = 60


def _dead_port() -> int:
    """A loopback port that was bound and closed: nothing listens on it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _run(command: list[str]) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    try:
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=LIMIT, env=crawl_environment())
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"not ended within {LIMIT} s:\n{(exc.stderr or b'')[-3000:]!r}") from None
    return result, time.monotonic() - start


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "] ERROR: " in line]


def test_database_on_a_dead_port_ends_at_the_connect_timeout(web: TestWeb) -> None:
    database = Database(f"postgresql://postgres@127.0.0.1:{_dead_port()}/crawl")
    result, took = _run(crawl_command("links", database, url=web.url("links"), settings={"CRAWLER_STORAGE_CONNECT_TIMEOUT": "2"}))
    assert result.returncode == exitcodes.DATABASE_UNREACHABLE, result.stderr[-3000:]
    assert took < LIMIT
    (reason,) = _error_lines(result.stderr)
    assert "The database stayed unreachable for 2 s" in reason and "Connection refused" in reason
    assert "Traceback" not in result.stderr


def test_a_role_that_does_not_exist_is_refused_at_once(web: TestWeb) -> None:
    database = Database(POSTGRES_ADMIN_URL.replace("postgres@", "no_such_crawler_role@", 1))
    result, _ = _run(crawl_command("links", database, url=web.url("links")))
    assert result.returncode == exitcodes.DATABASE_REFUSED, result.stderr[-3000:]
    (reason,) = _error_lines(result.stderr)
    assert "The database refused the connection" in reason and 'role "no_such_crawler_role" does not exist' in reason
    assert "retrying" not in result.stderr and "Traceback" not in result.stderr


def test_every_seed_unreachable_is_an_error_row_and_its_own_status(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    seed = f"http://127.0.0.1:{_dead_port()}/"
    result, _ = _run(crawl_command("links", database, url=seed))
    assert result.returncode == exitcodes.SEEDS_UNREACHABLE, result.stderr[-3000:]
    (reason,) = _error_lines(result.stderr)
    assert "failed_seeds_unreachable" in reason
    assert "0 pages fetched, 1 errors" in result.stderr
    row = database.pages()[seed]
    assert row["status"] == "error"
    assert row["error"].startswith("connection refused while fetching robots.txt")


def test_a_second_run_of_the_same_crawl_stops_at_once(web: TestWeb, postgres_database: Database, tmp_path: Path) -> None:
    first = start_crawl("links", postgres_database, tmp_path / "first.log", url=web.url("killable"), settings={"CRAWLER_DEFAULT_DELAY": "0.1"})
    try:
        deadline = time.monotonic() + LIMIT
        while not _table_has_rows(postgres_database, "crawl_locks"):
            assert first.poll() is None and time.monotonic() < deadline, (tmp_path / "first.log").read_text()[-3000:]
            time.sleep(0.2)
        result, _ = _run(crawl_command("links", postgres_database, url=web.url("killable")))
        assert result.returncode == exitcodes.ALREADY_RUNNING, result.stderr[-3000:]
        (reason,) = _error_lines(result.stderr)
        assert "is already running" in reason and f"pid {first.pid}" in reason
        assert first.poll() is None
    finally:
        first.terminate()  # SIGTERM: stopped before its end
        assert first.wait(LIMIT) == exitcodes.STOPPED
    # The first run released its lock: the same crawl may run again at once.
    assert not _table_has_rows(postgres_database, "crawl_locks")


def _table_has_rows(database: Database, table: str) -> bool:
    try:
        return bool(database.query(f"SELECT COUNT(*) FROM {table}")[0][0])
    except Exception:  # not created yet
        return False


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["links"], "no seed"),
        (["links", "-a", "url="], "no seed"),
        (["nosuch", "-a", "url=http://127.0.0.1/"], "unknown spider 'nosuch'"),
        (["links", "-a", "url=ftp://127.0.0.1/pub/"], "unsupported scheme ftp:"),
    ],
)
def test_usage_errors_are_one_line_and_status_2(arguments: list[str], message: str) -> None:
    result, _ = _run([sys.executable, "-m", "scrapy", "crawl", *arguments])
    assert result.returncode == exitcodes.USAGE
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


def test_crawl_script_takes_options_without_a_spider(web: TestWeb, tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    command = [str(ROOT / "crawl"), web.url("links"), "-a", "max_pages=3", "-s", f"DATABASE_URL={database.url}", "-s", "CRAWLER_DEFAULT_DELAY=0"]
    result, _ = _run(command)
    assert result.returncode == exitcodes.FINISHED, result.stderr[-3000:]
    assert len(database.pages()) == 3
    assert "finished: 3 pages fetched" in result.stderr

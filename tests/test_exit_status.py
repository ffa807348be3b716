"""The exit status of ``scrapy crawl`` and ``./crawl`` says how the job ended, for cron: each case
in a real process, ending within a minute with its status and a one-line reason."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from scrapy.utils.project import get_project_settings

from crawler import exitcodes
from crawler.commands.crawl import Command as CrawlCommand
from tests.conftest import POSTGRES_ADMIN_URL
from tests.helpers import ROOT, Database, crawl_command, crawl_environment, free_port, start_crawl, wait_until
from tests.testweb import TestWeb

LIMIT = 60


def _run(command: list[str]) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    try:
        result = subprocess.run(
            command, cwd=ROOT, capture_output=True, text=True, timeout=LIMIT, env=crawl_environment()
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"not ended within {LIMIT} s:\n{(exc.stderr or b'')[-3000:]!r}") from None
    return result, time.monotonic() - start


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "] ERROR: " in line]


@pytest.mark.integration
def test_database_on_a_dead_port_ends_at_the_connect_timeout(web: TestWeb) -> None:
    database = Database(f"postgresql://postgres@127.0.0.1:{free_port()}/crawl")
    result, took = _run(
        crawl_command("links", database, url=web.url("links"), settings={"CRAWLER_STORAGE_CONNECT_TIMEOUT": "2"})
    )
    assert result.returncode == exitcodes.DATABASE_UNREACHABLE, result.stderr[-3000:]
    assert took < LIMIT
    (reason,) = _error_lines(result.stderr)
    assert "The database stayed unreachable for 2 s" in reason and "Connection refused" in reason
    assert "Traceback" not in result.stderr


@pytest.mark.integration
def test_a_role_that_does_not_exist_is_refused_at_once(web: TestWeb) -> None:
    database = Database(POSTGRES_ADMIN_URL.replace("postgres@", "no_such_crawler_role@", 1))
    result, _ = _run(crawl_command("links", database, url=web.url("links")))
    assert result.returncode == exitcodes.DATABASE_REFUSED, result.stderr[-3000:]
    (reason,) = _error_lines(result.stderr)
    assert "The database refused the connection" in reason and 'role "no_such_crawler_role" does not exist' in reason
    assert "retrying" not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.integration
def test_every_seed_unreachable_is_an_error_row_and_its_own_status(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    seed = f"http://127.0.0.1:{free_port()}/"
    result, _ = _run(crawl_command("links", database, url=seed))
    assert result.returncode == exitcodes.SEEDS_UNREACHABLE, result.stderr[-3000:]
    (reason,) = _error_lines(result.stderr)
    assert "failed_seeds_unreachable" in reason
    assert "0 pages fetched, 0 unchanged, 1 errors" in result.stderr
    row = database.pages()[seed]
    assert row["status"] == "error"
    assert row["error"].startswith("connection refused while fetching robots.txt")


@pytest.mark.integration
def test_a_second_run_of_the_same_crawl_stops_at_once(
    web: TestWeb, postgres_database: Database, tmp_path: Path
) -> None:
    first = start_crawl(
        "links",
        postgres_database,
        tmp_path / "first.log",
        url=web.url("killable"),
        settings={"CRAWLER_DEFAULT_DELAY": "0.1"},
    )
    try:
        wait_until(
            lambda: _table_has_rows(postgres_database, "crawl_locks") or first.poll() is not None,
            LIMIT,
            "the first run's lock",
        )
        assert first.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
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
        ({}, "no seed"),
        ({"url": ""}, "no seed"),
        ({"url": "ftp://127.0.0.1/pub/"}, "unsupported scheme ftp:"),
        ({"seeds_file": "/nonexistent/seeds.txt"}, "cannot read the seeds file"),
    ],
)
def test_usage_problems_of_spider_arguments(arguments: dict[str, str], message: str) -> None:
    command = CrawlCommand()
    command.settings = get_project_settings()
    assert message in (command._usage_problem("links", arguments) or "")
    assert command._usage_problem("links", {"url": "https://example.com/"}) is None


@pytest.mark.integration
def test_a_usage_error_is_one_line_and_status_2() -> None:
    result, _ = _run([sys.executable, "-m", "scrapy", "crawl", "nosuch", "-a", "url=http://127.0.0.1/"])
    assert result.returncode == exitcodes.USAGE
    assert result.stderr == "scrapy crawl: error: unknown spider 'nosuch' (spiders: links, sitemap)\n"


@pytest.mark.integration
def test_crawl_script_takes_options_without_a_spider(web: TestWeb, tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    command = [
        str(ROOT / "crawl"),
        web.url("links"),
        "-a",
        "max_pages=3",
        "-s",
        f"DATABASE_URL={database.url}",
        "-s",
        "CRAWLER_DEFAULT_DELAY=0",
    ]
    result, _ = _run(command)
    assert result.returncode == exitcodes.FINISHED, result.stderr[-3000:]
    assert len(database.pages()) == 3
    assert "finished: 3 pages fetched" in result.stderr

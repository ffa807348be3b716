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
from tests.nginx import Nginx
from tests.testweb import TestWeb
from tests.throwaway_redis import ThrowawayRedis

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
def test_redis_on_a_dead_port_ends_at_its_connect_timeout_in_one_line(web: TestWeb, tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    web.clear()
    settings = {"REDIS_URL": f"redis://:secret@127.0.0.1:{free_port()}/0", "CRAWLER_REDIS_CONNECT_TIMEOUT": "2"}
    result, _ = _run(crawl_command("links", database, url=web.url("links"), settings=settings))
    assert result.returncode == exitcodes.REDIS_UNREACHABLE, result.stderr[-3000:]
    (reason,) = _error_lines(result.stderr)
    assert "unreachable for 2 s (CRAWLER_REDIS_CONNECT_TIMEOUT)" in reason and "Connection refused" in reason
    assert "Traceback" not in result.stderr and "secret" not in result.stderr
    assert web.log("links") == []


@pytest.mark.integration
@pytest.mark.redis
def test_a_worker_started_before_its_redis_joins_it_once_it_answers(web: TestWeb, tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    server = ThrowawayRedis(tmp_path / "redis", persistent=False)
    log = tmp_path / "worker.log"
    web.clear()
    settings = {"REDIS_URL": server.url, "CRAWLER_IDLE_CLOSE_SECONDS": "1"}
    worker = start_crawl("links", database, log, url=web.url("links"), settings=settings)
    try:
        wait_until(lambda: "waiting up to 30 s for it" in log.read_text(), 30, "the worker waiting for Redis")
        server.start()
        assert worker.wait(timeout=LIMIT) == exitcodes.FINISHED, log.read_text()[-3000:]
    finally:
        if worker.poll() is None:
            worker.kill()
        server.stop()
    assert len(web.log("links")) > 1 and "Traceback" not in log.read_text()


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
    assert reason.endswith(
        "ERROR: Closing the job (failed_seeds_unreachable): no page could be fetched; first "
        f"{seed}: connection refused while fetching robots.txt: disallow all until it can be fetched; "
        "1 error row in scrapy export --status error"
    )
    assert "0 pages fetched, 0 unchanged, 1 errors" in result.stderr
    assert "Reusing" not in result.stderr  # nothing was reused
    row = database.pages()[seed]
    assert row["status"] == "error"
    assert row["error"].startswith("connection refused while fetching robots.txt")


@pytest.mark.integration
def test_a_bare_domain_on_a_plain_http_port_gets_the_http_hint(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    # nginx answers a TLS handshake on a plain-HTTP port at once, as web servers do (400).
    with Nginx(tmp_path / "nginx") as nginx:
        bare = nginx.url.removeprefix("http://").rstrip("/")
        result, _ = _run(crawl_command("links", database, url=bare))
    assert result.returncode == exitcodes.SEEDS_UNREACHABLE, result.stderr[-3000:]
    (reason,) = _error_lines(result.stderr)
    assert reason.endswith(
        f"ERROR: Closing the job (failed_seeds_unreachable): no page could be fetched; first https://{bare}/: "
        "TLS error: wrong version number while fetching robots.txt: disallow all until it can be fetched "
        f"(if the site speaks plain HTTP, give the seed as http://{bare}/: a seed without a scheme means "
        "https://); 1 error row in scrapy export --status error"
    )


@pytest.mark.integration
def test_the_last_lines_say_where_the_rows_are_and_how_to_look_at_them(web: TestWeb, tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    log_file = tmp_path / "not" / "yet" / "crawl.log"  # a cron job's first run: the folder is made
    result, _ = _run(
        crawl_command(
            "links", database, url=web.url("links"), max_pages="2", job_id="seen", settings={"LOG_FILE": str(log_file)}
        )
    )
    assert result.returncode == exitcodes.FINISHED, log_file.read_text()[-3000:]
    lines = [line.split("] INFO: ", 1)[-1] for line in log_file.read_text().splitlines()]
    summary = next(i for i, line in enumerate(lines) if line.startswith("Crawl seen finished: 2 pages fetched"))
    assert lines[summary].endswith(f"rows are in {tmp_path / 'crawler.db'}")
    assert lines[summary + 1] == (
        "To look at them: scrapy export --job seen; scrapy serve for the dashboard (with the same DATABASE_URL)"
    )


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


ARGUMENTS = "crawl, job_id, max_depth, max_pages, max_time, scope, seeds_file, url"


@pytest.mark.integration
@pytest.mark.parametrize(
    ("command", "message"),
    [
        (
            ["scrapy", "crawl", "links", "-a", "url=http://127.0.0.1/", "-a", "max_page=5"],
            f"scrapy crawl: error: unknown spider argument 'max_page' (did you mean max_pages? arguments: {ARGUMENTS})",
        ),
        (
            ["./crawl", "http://127.0.0.1/", "-a", "colour=blue"],
            f"scrapy crawl: error: unknown spider argument 'colour' (arguments: {ARGUMENTS})",
        ),
        (
            ["./crawl", "-a", "max_pages=5"],
            "./crawl: the URL comes first, before options such as -a "
            "(usage: ./crawl URL [links|sitemap] [scrapy crawl options, e.g. -a max_pages=100])",
        ),
        (
            ["./crawl", "http://127.0.0.1/", "spider"],
            "scrapy crawl: error: unknown spider 'spider' (spiders: links, sitemap)",
        ),
        (
            [
                "scrapy",
                "crawl",
                "links",
                "-a",
                "url=http://127.0.0.1/",
                "-s",
                'CRAWLER_ALLOWED_NETWORKS=["10.0.0.0/8", "lan"]',
            ],
            "scrapy crawl: error: CRAWLER_ALLOWED_NETWORKS: 'lan' is not a network: "
            "'lan' does not appear to be an IPv4 or IPv6 network",
        ),
        (
            [
                "scrapy",
                "crawl",
                "links",
                "-a",
                "url=http://127.0.0.1/",
                "-s",
                "CRAWLER_HTTP2=True",
                "-s",
                "CRAWLER_PROXY=http://127.0.0.1:3128",
            ],
            "scrapy crawl: error: CRAWLER_HTTP2 cannot go through a proxy (Scrapy's HTTP/2 handler has no proxy "
            "support): use one or the other",
        ),
        (
            ["scrapy", "crawl", "links", "-a", "url=http://127.0.0.1/", "-s", "LOG_FILE=/proc/none/crawl.log"],
            "scrapy crawl: error: cannot create the folder of LOG_FILE /proc/none/crawl.log: No such file or directory",
        ),
    ],
)
def test_a_newcomer_mistake_is_one_line_that_says_what_to_do(command: list[str], message: str) -> None:
    program = [sys.executable, "-m", "scrapy"] if command[0] == "scrapy" else [str(ROOT / command[0])]
    result, _ = _run([*program, *command[1:]])
    assert (result.returncode, result.stderr) == (exitcodes.USAGE, message + "\n")


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
    assert sum(1 for row in database.pages().values() if row["status"] != "skipped") == 3
    assert "finished: 3 pages fetched" in result.stderr


@pytest.mark.integration
def test_crawl_script_takes_the_spider_before_the_url(web: TestWeb, tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    command = [
        str(ROOT / "crawl"),
        "sitemap",
        web.url("links"),
        "-a",
        "max_pages=1",
        "-s",
        f"DATABASE_URL={database.url}",
    ]
    result, _ = _run(command)
    assert result.returncode == exitcodes.FINISHED, result.stderr[-3000:]
    assert database.query("SELECT spider FROM crawl_jobs") == [("sitemap",)]

"""Shared fixtures: the real services, the local test web, a fresh database per test (both
backends), and a helper that runs ``scrapy crawl`` the way users do.

Markers say what a test needs beyond the process: ``integration`` (it starts servers or crawl
processes), ``postgres`` and ``redis`` (the services). ``--fast`` runs only what needs none of
them and reports the others as deselected; without it, a missing service ends the session
at once: nothing is skipped.
"""

from __future__ import annotations

import os
import socket
import subprocess
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest
import redis
from playwright.sync_api import Browser

from tests.browser import chromium
from tests.helpers import Database, FakeClock, forget_crawl
from tests.testweb import TestWeb

if TYPE_CHECKING:
    from xdist.workermanage import WorkerController

POSTGRES_ADMIN_URL = os.environ.get("CRAWLER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_ADDRESS = ("127.0.0.1", 6379)
REDIS_URL = f"redis://{REDIS_ADDRESS[0]}:{REDIS_ADDRESS[1]}/0"

SERVICE_FIXTURES = {
    "redis_client": "redis",
    "crawl_name": "redis",
    "postgres_database": "postgres",
    "module_postgres_database": "postgres",
}
"""Fixtures that need a service, by the marker of that service."""
SERVER_FIXTURES = frozenset({"web", "browser"})
"""Fixtures that start servers (or a browser): their tests are integration tests."""
FAST_LEAVES_OUT = ("integration", "postgres", "redis")
"""The markers of the tests ``--fast`` does not run."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fast",
        action="store_true",
        help="run only the tests that need no PostgreSQL, Redis, server or crawl process; leave out the others",
    )


def _fast(config: pytest.Config) -> bool:
    return bool(config.getoption("--fast"))


WEB_SITES = {
    "links": "links",
    "sitemaps": "sitemaps",
    "fallback": "fallback",
    "index-fallback": "index-fallback",
    "no-sitemap": "no-sitemap",
    "sitemap-quirks": "sitemap-quirks",
    "sitemap-loop": "sitemap-loop",
    "hostile": "hostile",
    "heavy": "heavy:pages=300,links=200",
    "delayed": "paced:crawl_delay=0.3,pages=12",
    "fast": "paced:pages=40",
    "limited": "paced:rate=8,retry_after=1,pages=40",
    "robots-503": "paced:robots_status=503,pages=5",
    "robots-404": "paced:robots_status=404,pages=5",
    "broken": "paced:error_rate=1,error_status=500,pages=30",
    "refusing": "paced:refuse=0.3-100000,pages=10",  # robots.txt answered, then only 429s
    "shared": "paced:crawl_delay=0.05,pages=150",
    "indexed": "paced:crawl_delay=0.25,pages=5000,index=5000",  # a general index of 10,000 links
    "killable": "paced:pages=300,latency_ms=250",
    "stalling": "paced:pages=20,latency_ms=20000",  # every answer, robots.txt too, takes 20 s
    # Answers slow enough that the override's concurrency, not its delay, bounds the crawl
    # (8 would be in flight at once): its turns then share the host between shared processes.
    "overridden": "paced:pages=40,latency_ms=800",
    "steered": "paced:pages=300,latency_ms=50",
    "inbox": "paced:pages=3",
    "budgeted": "paced:pages=100",
    "validated": "paced:pages=30,validators=1",
    "throttling": "paced:rate=4,retry_after=5,pages=30",  # blocks long enough to be seen from outside
    "deep": "deep:pages=20",
    # one element of 20,000 attributes (150 KB); selects of 2,000 and 16,000 selected options
    "attributes": "deep:pages=10,depths=10,attributes=20000,options=2000-16000",
    "traps": "traps",
    # Sites no crawl exhausts: a crawl of them runs at the pace of its delay until stopped.
    "endless-a": "paced:pages=1000000",
    "endless-b": "paced:pages=1000000",
    # Paced slowly enough that a worker stopped for a few seconds comes back mid-crawl.
    "stoppable": "paced:crawl_delay=0.2,pages=200",
}


def pytest_sessionstart(session: pytest.Session) -> None:
    if _fast(session.config):
        return
    missing = []
    try:
        psycopg.connect(POSTGRES_ADMIN_URL, connect_timeout=5).close()
    except psycopg.Error as exc:
        missing.append(f"PostgreSQL at {POSTGRES_ADMIN_URL}: {exc}")
    try:
        socket.create_connection(REDIS_ADDRESS, timeout=5).close()
    except OSError as exc:
        missing.append(f"Redis at {REDIS_ADDRESS[0]}:{REDIS_ADDRESS[1]}: {exc}")
    if missing:
        pytest.exit(
            "The tests need real services, and these are not reachable:\n  "
            + "\n  ".join(missing)
            + "\nRun the tests with ./run-tests, which starts them, or ./run-tests --fast for the tests that need none.",
            returncode=3,
        )


@pytest.fixture(autouse=True)
def _no_processes_in_fast_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """In the fast mode, a test that starts a process is missing its ``integration`` marker."""
    if _fast(request.config):

        def refuse(*args: object, **kwargs: object) -> None:
            raise AssertionError(f"{request.node.nodeid} starts a process: mark it integration")

        monkeypatch.setattr(subprocess, "Popen", refuse)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="session")
def web() -> Iterator[TestWeb]:
    with TestWeb(WEB_SITES) as test_web:
        yield test_web


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium (Debian's package), driven by Playwright."""
    with chromium() as launched:
        yield launched


def _refuse_in_fast_mode(request: pytest.FixtureRequest, marker: str) -> None:
    """In the fast mode, a test that reaches a service (through ``request.getfixturevalue``, which
    no marker follows) is missing the service's marker."""
    if _fast(request.config):
        raise AssertionError(f"{request.node.nodeid} reaches a service: mark it {marker}")


@contextmanager
def _fresh_database(kind: str, tmp_path: Path) -> Iterator[Database]:
    if kind == "sqlite":
        yield Database(f"sqlite:///{tmp_path / 'crawler.db'}")
        return
    name = f"crawler_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    url = POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        yield Database(url)
    finally:
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """A fresh, empty database of each backend."""
    with _fresh_database(request.param, tmp_path) as fresh:
        yield fresh


@pytest.fixture(scope="module")
def module_postgres_database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Database]:
    """A fresh PostgreSQL database shared by the tests of a module (for a server they start once)."""
    _refuse_in_fast_mode(request, "postgres")
    with _fresh_database("postgresql", tmp_path_factory.mktemp("database")) as fresh:
        yield fresh


@pytest.fixture
def postgres_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """A fresh, empty PostgreSQL database, for what only a server database supports."""
    _refuse_in_fast_mode(request, "postgres")
    with _fresh_database("postgresql", tmp_path) as fresh:
        yield fresh


@pytest.fixture
def redis_client(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    _refuse_in_fast_mode(request, "redis")
    client = redis.Redis.from_url(REDIS_URL)
    yield client
    client.close()


@pytest.fixture
def crawl_name(redis_client: redis.Redis) -> Iterator[str]:
    """A crawl id of its own, whose keys are deleted afterwards."""
    name = f"test-{uuid.uuid4().hex[:12]}"
    yield name
    forget_crawl(redis_client, name)


PAIRED_STACKS = {("sqlite", "in-process"), ("postgresql", "redis")}
"""A crawl test that takes both a database and a frontier runs twice, not four times: each
backend once and each frontier once, paired as deployments pair them (one process writing a
SQLite file; processes sharing Redis and PostgreSQL). Backends and frontiers do not depend on
each other; each is tested on its own in test_storage and test_frontier_contract."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _deselect(config, items, lambda item: _stack(item) not in PAIRED_STACKS | {None})
    for item in items:
        for marker in _needs(item):
            item.add_marker(marker)
    if _fast(config):
        # Left out, not skipped: the tests that need a service, a server or a process.
        left_out = _deselect(config, items, lambda item: any(map(item.get_closest_marker, FAST_LEAVES_OUT)))
        counts = {"tests": len(left_out)}
        counts |= {marker: sum(1 for item in left_out if item.get_closest_marker(marker)) for marker in FAST_LEAVES_OUT}
        config.stash[_LEFT_OUT] = counts
        if hasattr(config, "workeroutput"):  # a pytest-xdist worker: the controller reports
            config.workeroutput["left_out"] = counts


def _deselect(
    config: pytest.Config, items: list[pytest.Item], chosen: Callable[[pytest.Item], bool]
) -> list[pytest.Item]:
    deselected = [item for item in items if chosen(item)]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not chosen(item)]
    return deselected


_LEFT_OUT = pytest.StashKey[dict[str, int]]()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: WorkerController, error: object) -> None:
    """Each pytest-xdist worker collects every test: any one's count is the run's."""
    counts = getattr(node, "workeroutput", {}).get("left_out")
    if counts:
        node.config.stash[_LEFT_OUT] = counts


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    counts = config.stash.get(_LEFT_OUT, None)
    if counts and counts["tests"]:
        needs = ", ".join(f"{counts[marker]} {marker}" for marker in FAST_LEAVES_OUT)
        terminalreporter.write_line(f"--fast left out {counts['tests']} tests, marked {needs}; ./run-tests runs them")


def _needs(item: pytest.Item) -> set[str]:
    """The markers a test's fixtures imply."""
    names = set(getattr(item, "fixturenames", ()))
    needs = {marker for name, marker in SERVICE_FIXTURES.items() if name in names}
    if names & SERVER_FIXTURES:
        needs.add("integration")
    return needs


def _stack(item: pytest.Item) -> tuple[str, str] | None:
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "database" in params and "frontier" in params:
        return params["database"], params["frontier"]
    return None


@pytest.fixture(params=["in-process", pytest.param("redis", marks=pytest.mark.redis)])
def frontier(request: pytest.FixtureRequest) -> dict[str, str]:
    """Settings of a crawl whose frontier is in the process, or shared through Redis."""
    if request.param == "in-process":
        return {}
    return {
        "REDIS_URL": REDIS_URL,
        "CRAWLER_CRAWL_ID": request.getfixturevalue("crawl_name"),
        # one process: it may end soon after the frontier empties
        "CRAWLER_IDLE_CLOSE_SECONDS": "0.5",
    }

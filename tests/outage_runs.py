"""Shared crawls through outages, run by the tests at a small scale and by
``bench.shared_outages`` at full scale: Redis a black hole (no answer at all) for a while, and
PostgreSQL stopped for longer than the leases."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import psycopg

from tests.blackhole import BlackholeProxy
from tests.helpers import Database, finish_all, start_crawl
from tests.testweb import TestWeb
from tests.throwaway_postgres import ThrowawayPostgres

HEARTBEAT = re.compile(
    r"^(\S+ \S+) \[crawler\.extensions\.reactor_heartbeat\] INFO: Reactor heartbeat: lag ([0-9.]+) s", re.M
)


@dataclass
class OutageRun:
    logs: list[str]
    fetches: Counter[str]
    """Requests the site saw, per path (robots.txt left out)."""
    rows: dict[str, dict]
    outage: tuple[float, float]
    """When the outage began and ended (Unix time)."""

    def heartbeats_during_outage(self) -> list[tuple[float, float]]:
        """(when, lag) of each heartbeat logged while the outage lasted (whole seconds)."""
        began, ended = self.outage
        beats = []
        for log in self.logs:
            for stamp, lag in HEARTBEAT.findall(log):
                when = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").timestamp()
                if began <= when <= ended - 1:
                    beats.append((when, float(lag)))
        return sorted(beats)

    @property
    def fetched_twice(self) -> list[str]:
        return sorted(path for path, n in self.fetches.items() if n > 1)


def _wait_for(condition: object, what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.05)


def _result(web: TestWeb, site: str, database: Database, logs: list[str], outage: tuple[float, float]) -> OutageRun:
    fetches = Counter(entry.path for entry in web.log(site) if entry.path != "/robots.txt")
    rows = {url.removeprefix(web.base(site)): row for url, row in database.pages().items()}
    return OutageRun(logs, fetches, rows, outage)


def redis_blackholed(
    web: TestWeb,
    database: Database,
    redis_address: tuple[str, int],
    crawl: str,
    tmp_path: Path,
    *,
    site: str,
    silence: float,
    settings: dict[str, str],
) -> OutageRun:
    """One worker whose Redis stops answering for ``silence`` seconds, well into its crawl."""
    web.clear()
    with BlackholeProxy(redis_address) as proxy:
        log = tmp_path / "worker.log"
        options = {
            "REDIS_URL": f"redis://{proxy.address}/0",
            "CRAWLER_CRAWL_ID": crawl,
            "CRAWLER_IDLE_CLOSE_SECONDS": "2",
            "CRAWLER_REACTOR_HEARTBEAT_SECONDS": "1",
            "CRAWLER_REDIS_TIMEOUT": "1",
            **settings,
        }
        worker = start_crawl("links", database, log, url=web.url(site), settings=options)
        _wait_for(lambda: len(web.log(site)) >= 20, "the crawl did not start")
        began = time.time()
        proxy.blackhole()
        time.sleep(silence)
        ended = time.time()
        proxy.forward()
        logs = finish_all([worker], [log], timeout=240)
    return _result(web, site, database, logs, (began, ended))


def postgres_stopped(
    web: TestWeb,
    crawl: str,
    tmp_path: Path,
    *,
    site: str,
    workers: int,
    outage: float,
    settings: dict[str, str],
) -> OutageRun:
    """Shared workers whose PostgreSQL stops for ``outage`` seconds, well into their crawl."""
    # Not under pytest's temporary folder: the postgres user must be able to reach it.
    root = Path(tempfile.mkdtemp(prefix="crawler-pg-"))
    postgres = ThrowawayPostgres(root).init()
    postgres.start()
    database = Database(postgres.url)
    try:
        web.clear()
        options = {
            "CRAWLER_CRAWL_ID": crawl,
            "CRAWLER_IDLE_CLOSE_SECONDS": "2",
            "CRAWLER_STORAGE_RETRY_MAX_DELAY": "1",
            "CRAWLER_UNSAVED_ROWS_DIR": str(tmp_path),
            **settings,
        }
        logs = [tmp_path / f"worker-{n}.log" for n in range(workers)]
        started = [start_crawl("links", database, log, url=web.url(site), settings=options) for log in logs]
        _wait_for(lambda: _row_count(postgres.url) >= 20, "no rows stored")
        began = time.time()
        postgres.stop()
        time.sleep(outage)
        ended = time.time()
        postgres.start()
        texts = finish_all(started, logs, timeout=outage + 240)
        return _result(web, site, database, texts, (began, ended))
    finally:
        try:
            postgres.stop()
        except subprocess.CalledProcessError:
            pass  # already stopped
        shutil.rmtree(root, ignore_errors=True)


def _row_count(url: str) -> int:
    try:
        with psycopg.connect(url, connect_timeout=2) as connection:
            return connection.execute("SELECT COUNT(*) FROM pages").fetchone()[0]  # type: ignore[index]
    except psycopg.Error:
        return 0

"""Helpers for tests: read a database of either backend, run a crawl as a user would."""

from __future__ import annotations

import os
import re
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
from scrapy import Spider

import crawler.settings
from crawler.politeness.policy import DomainState, Policy
from crawler.redis.shards import recorded_count
from crawler.redis.store import DEFAULT_SHARDS, FrontierConfig, FrontierStore
from crawler.settings import LOGSTATS_INTERVAL

ROOT = Path(__file__).resolve().parents[1]

# Politeness off and quiet logs: tests assert on behaviour, not pacing.
FAST = {
    "CRAWLER_DEFAULT_DELAY": "0",
    "CRAWLER_LATENCY_FACTOR": "0",
    "CRAWLER_RETRY_BACKOFF_CAP": "0.05",
    "CRAWLER_CIRCUIT_OPEN_SECONDS": "0.5",
    "LOG_LEVEL": "INFO",
    "CONCURRENT_REQUESTS_PER_DOMAIN": "8",
    # One request more per site, which the tests of exact request logs do not count on;
    # tests/test_crawl_traps.py turns it on.
    "CRAWLER_SOFT404_PROBE": "False",
}


@dataclass(frozen=True)
class Database:
    url: str

    @property
    def backend(self) -> str:
        return "sqlite" if self.url.startswith("sqlite") else "postgresql"

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.backend == "sqlite":
            path = self.url.partition("://")[2][1:]
            with sqlite3.connect(path) as connection:
                return connection.execute(sql, params).fetchall()
        with psycopg.connect(self.url) as connection:
            return connection.execute(sql.replace("?", "%s"), params).fetchall()

    def pages(self) -> dict[str, dict[str, Any]]:
        """Rows of ``pages`` by URL, as dicts."""
        columns = [
            "url",
            "status",
            "http_status",
            "error",
            "title",
            "description",
            "text",
            "body",
            "noindex",
            "links_count",
            "links",
            "final_url",
            "redirect_count",
            "depth",
            "discovered_via",
            "content_type",
            "content_length",
            "content_hash",
            "surt_key",
            "url_hash",
            "sitemap_lastmod",
            "sitemap_changefreq",
            "sitemap_priority",
            "job_id",
            "etag",
            "last_modified",
            "server_date",
            "crawl_duration_ms",
            "body_truncated",
        ]
        rows = self.query(f"SELECT {', '.join(columns)} FROM pages")
        return {row[0]: dict(zip(columns, row)) for row in rows}


def scrapy_command(*arguments: str, settings: Mapping[str, object] | None = None) -> list[str]:
    """``python -m scrapy ARGUMENTS -s NAME=VALUE …``, in this Python."""
    options = [part for name, value in (settings or {}).items() for part in ("-s", f"{name}={value}")]
    return [sys.executable, "-m", "scrapy", *arguments, *options]


def run_scrapy(database: Database, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``scrapy ARGUMENTS`` on ``database``, as an operator runs it (its status and output kept)."""
    return subprocess.run(
        scrapy_command(*arguments, settings={"DATABASE_URL": database.url}),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=crawl_environment(),
    )


def crawl_command(
    spider: str, database: Database, *args: str, settings: dict[str, str] | None = None, **arguments: str
) -> list[str]:
    """``scrapy crawl SPIDER -a k=v … -s K=V …`` with the test settings."""
    spider_arguments = [part for name, value in arguments.items() for part in ("-a", f"{name}={value}")]
    settings = {**FAST, "DATABASE_URL": database.url, **(settings or {})}
    return scrapy_command("crawl", spider, *spider_arguments, *args, settings=settings)


def crawl_environment() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    return env


def crawl(
    spider: str,
    database: Database,
    *args: str,
    settings: dict[str, str] | None = None,
    timeout: float = 300,
    status: int = 0,
    **arguments: str,
) -> subprocess.CompletedProcess[str]:
    """Run a crawl the way users do; fail on an exit status other than ``status`` or a traceback."""
    command = crawl_command(spider, database, *args, settings=settings, **arguments)
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=crawl_environment())
    assert result.returncode == status, result.stderr[-5000:]
    assert "Traceback" not in result.stderr, result.stderr[-5000:]
    return result


def start_crawl(
    spider: str, database: Database, log: Path, *args: str, settings: dict[str, str] | None = None, **arguments: str
) -> subprocess.Popen[bytes]:
    """Start a crawl in the background, its output in ``log``."""
    command = crawl_command(spider, database, *args, settings=settings, **arguments)
    with log.open("wb") as output:
        return subprocess.Popen(command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT, env=crawl_environment())


def finish_all(workers: list[subprocess.Popen[bytes]], logs: list[Path], timeout: float) -> list[str]:
    """Wait for every crawl process (killed by its PID past ``timeout``), then read their logs:
    none outlives the test, whatever it asserts next."""
    deadline = time.monotonic() + timeout
    for worker in workers:
        try:
            worker.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    return [log.read_text(errors="replace") for log in logs]


def crawl_keys(name: str) -> str:
    """The key prefix of a shared crawl (its id a Redis Cluster hash tag)."""
    return f"crawler:{{{name}}}"


def crawl_store(client: Any, name: str) -> FrontierStore:
    """The frontier of shared crawl ``name``, with the shard count its workers recorded."""
    prefix = crawl_keys(name)
    return FrontierStore(client, prefix, shards=recorded_count(client, f"{prefix}:shards", DEFAULT_SHARDS))


def forget_crawl(client: Any, name: str) -> None:
    """Delete every key of shared crawl ``name`` (its shards' too)."""
    FrontierStore(client, crawl_keys(name)).delete_all(keep=set())


def policy_store(client: Any, crawl: str, policy: Policy, clock: Callable[[], float], **config: Any) -> FrontierStore:
    """The Redis state of crawl ``crawl``, its domains' defaults ``policy``'s, without the robots.txt gate."""
    defaults = FrontierConfig(
        policy.effective_delay(DomainState()), policy.concurrency(DomainState()), robots=False, **config
    )
    return FrontierStore(client, crawl_keys(crawl), defaults, clock=clock)


def project_settings(**overrides: Any) -> dict[str, Any]:
    """The project's settings module as a dict, with overrides, for ``get_crawler``."""
    values = {name: value for name, value in vars(crawler.settings).items() if name.isupper()}
    return {**values, "LOG_LEVEL": "INFO", **overrides}


def linked_pages(folder: Path, count: int) -> Path:
    """``folder`` holding ``page-0.html`` … ``page-{count - 1}.html``, each linking to all the others."""
    for n in range(count):
        links = "".join(f'<a href="page-{m}.html">{m}</a>' for m in range(count) if m != n)
        (folder / f"page-{n}.html").write_text(f"<html><head><title>Page {n}</title></head><body>{links}</body></html>")
    return folder


def free_port(address: str = "127.0.0.1") -> int:
    """A port that was free on ``address`` a moment ago (bound and closed: nothing listens)."""
    with socket.socket() as probe:
        probe.bind((address, 0))
        return probe.getsockname()[1]


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.2)


class FakeClock:
    """A clock for the pure parts (policy, limiter, frontier): seconds that pass only when told."""

    def __init__(self, now: float = 1_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


class PageSpider(Spider):
    """A spider with the links spider's callbacks and nothing else, for requests built in tests."""

    name = "links"
    default_callbacks = ("parse_page", "page_failed")

    def parse_page(self, response: Any) -> None:  # pragma: no cover - never called
        pass

    def page_failed(self, failure: Any) -> None:  # pragma: no cover - never called
        pass


_LOGSTATS = re.compile(r"^(\S+ \S+) \[scrapy\.extensions\.logstats\] INFO: Crawled (\d+) pages", re.MULTILINE)


def logged_rate(log: Path, window: float = 60.0) -> float:
    """Pages per second over the last ``window`` seconds of a crawl process, from the lines
    Scrapy logs every ``LOGSTATS_INTERVAL`` seconds (its first one as the spider opens)."""
    lines = [(datetime.fromisoformat(at).timestamp(), int(n)) for at, n in _LOGSTATS.findall(log.read_text())]
    last_at, last = lines[-1]
    first_at, first = next((at, n) for at, n in lines if at >= last_at - window)
    # Times are to the second: the span is a whole number of intervals.
    return (last - first) / (round((last_at - first_at) / LOGSTATS_INTERVAL) * LOGSTATS_INTERVAL)

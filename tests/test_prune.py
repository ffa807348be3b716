"""``scrapy prune`` on both backends: it leaves exactly what the retention settings keep."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from crawler.items import PageItem
from crawler.outcomes import page_item
from crawler.storage import open_backend
from crawler.storage.backend import Batch
from crawler.storage.retention import RetentionPolicy, prune
from crawler.storage.rows import page_row
from tests.helpers import ROOT, Database, crawl_environment

NOW = datetime(2026, 6, 1, tzinfo=UTC)
POLICY = RetentionPolicy(
    robots_decisions_days=30,
    allowed_robots_decisions=False,
    jobs_days=90,
    gone_visits=3,
    bodies_days=60,
    request_log_days=14,
    stats_samples_days=14,
    workers_days=14,
    batch_size=7,
)


def _decision(n: int, allowed: bool, age_days: float) -> tuple[object, ...]:
    return (
        f"http://e.example/{n}",
        "e.example",
        "crawler",
        allowed,
        "Disallow: /",
        None,
        None,
        NOW - timedelta(days=age_days),
        "j",
    )


def _page(n: int, status: str, age_days: float, http_status: int = 200) -> PageItem:
    return page_item(
        f"http://e.example/p/{n}",
        status,
        NOW - timedelta(days=age_days),
        http_status=http_status,
        body=b"<html>",
        text="t",
    )


async def _fill(database: Database) -> None:
    backend = open_backend(database.url)
    await backend.open()
    decisions = [_decision(n, allowed=n % 3 == 0, age_days=n % 50) for n in range(100)]
    pages = [_page(n, "fetched", age_days=n) for n in range(100)]  # 39 of them 61 days old or more
    gone = [_page(100 + n, "error", 1, http_status=404 if n % 2 else 410) for n in range(10)]
    await backend.write(Batch(robots_decisions=decisions, pages=[page_row(p) for p in pages + gone]))
    for _ in range(2):  # three 404/410 visits in a row for the first half
        await backend.write(Batch(pages=[page_row(p) for p in gone[:5]]))
    await backend.write(Batch(pages=[page_row(_page(200, "error", 1, http_status=503))] * 3))
    for n, finished in enumerate([None, NOW - timedelta(days=100), NOW - timedelta(days=10)]):
        await backend.execute(
            "INSERT INTO crawl_jobs (id, spider, seeds, started_at, finished_at, status) VALUES (?, 'links', '', ?, ?, ?)",
            (f"job-{n}", NOW - timedelta(days=200), finished, "running" if finished is None else "finished"),
        )
    for n in range(20):  # one worker row a day, the first still running
        await backend.execute(
            "INSERT INTO workers (worker_id, job_id, spider, hostname, pid, started_at, heartbeat_at, state)"
            " VALUES (?, 'j', 'links', 'h', ?, ?, ?, ?)",
            (f"w{n}", n, NOW - timedelta(days=n + 1), NOW - timedelta(days=n), "running" if n < 16 else "finished"),
        )
    await backend.close()


def test_prune_leaves_what_the_settings_keep(database: Database) -> None:
    asyncio.run(_fill(database))
    removed = asyncio.run(_prune(database))
    kept = database.query("SELECT url, allowed, decided_at FROM robots_decisions")
    expected = {f"http://e.example/{n}" for n in range(100) if n % 3 and n % 50 <= 30}  # 30 days old: still kept
    assert {url for url, _, _ in kept} == expected
    assert removed["robots decisions"] == 100 - len(expected)
    pages = {url: (status, body) for url, status, body in database.query("SELECT url, status, body FROM pages")}
    gone = {f"http://e.example/p/{100 + n}" for n in range(5)}
    assert not gone & pages.keys() and removed["pages gone for good (404/410)"] == 5
    assert len(pages) == 100 + 5 + 1  # the fresh 404s and the 503 stay
    bodyless = {url for url, (_, body) in pages.items() if body is None}
    assert bodyless == {f"http://e.example/p/{n}" for n in range(61, 100)} and removed["bodies of old pages"] == 39
    assert {job for (job,) in database.query("SELECT id FROM crawl_jobs")} == {"job-0", "job-2"}
    assert removed["finished jobs"] == 1
    # silent for over 14 days: gone, whatever state its last write left (a killed one says running)
    assert {worker for (worker,) in database.query("SELECT worker_id FROM workers")} == {f"w{n}" for n in range(15)}
    assert removed["workers"] == 5
    assert removed["request log"] == 0 and removed["stats samples"] == 0

    second = asyncio.run(_prune(database))
    assert set(second.values()) == {0}


async def _prune(database: Database) -> dict[str, int]:
    backend = open_backend(database.url)
    await backend.open()
    try:
        return await prune(backend, POLICY, NOW)
    finally:
        await backend.close()


def test_prune_keeps_the_request_log_and_stats_samples_of_their_windows(tmp_path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")

    async def scenario() -> dict[str, int]:
        backend = open_backend(database.url)
        await backend.open()
        for n in range(20):
            started = NOW - timedelta(days=n)
            await backend.execute(
                "INSERT INTO request_log (domain, url, started_at, outcome) VALUES ('e.example', ?, ?, 'fetched')",
                (f"u{n}", started),
            )
            await backend.execute(
                "INSERT INTO stats_samples (worker_id, sampled_at, stats) VALUES ('w', ?, '{}')", (started,)
            )
        try:
            return await prune(backend, POLICY, NOW)
        finally:
            await backend.close()

    removed = asyncio.run(scenario())
    assert removed["request log"] == removed["stats samples"] == 5  # 15 to 19 days old
    assert database.query("SELECT COUNT(*) FROM request_log") == [(15,)]
    assert database.query("SELECT COUNT(*) FROM stats_samples") == [(15,)]


@pytest.mark.integration
def test_the_prune_command_reports_and_fails_clearly(tmp_path) -> None:
    command = [sys.executable, "-m", "scrapy", "prune", "-s", f"DATABASE_URL=sqlite:///{tmp_path / 'c.db'}"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=crawl_environment(), timeout=120)
    assert result.returncode == 0, result.stderr
    assert "robots decisions: 0 removed" in result.stdout and "pruned " in result.stdout
    dead = [sys.executable, "-m", "scrapy", "prune", "-s", "DATABASE_URL=postgresql://postgres@127.0.0.1:1/none"]
    result = subprocess.run(dead, cwd=ROOT, capture_output=True, text=True, env=crawl_environment(), timeout=120)
    assert result.returncode == 1
    assert "prune: the database is unavailable" in result.stderr and "Traceback" not in result.stderr

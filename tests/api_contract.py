"""Rows as crawl processes write them for ``scrapy serve`` (workers, stats_samples,
domain_state, request_log, pages), for the API tests and benchmarks that need a crawl's
figures without running one."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import datetime, timedelta

import psycopg

from tests.helpers import Database


def execute_all(database: Database, statements: list[tuple[str, tuple]]) -> None:
    """Statements in one transaction."""
    if database.backend == "sqlite":
        with sqlite3.connect(database.url.partition("://")[2][1:]) as connection:
            for sql, params in statements:
                connection.execute(sql, params)
        return
    with psycopg.connect(database.url) as connection:
        for sql, params in statements:
            connection.execute(sql.replace("?", "%s"), params)


FAST_HOST = "127.0.0.11:8001"
THROTTLED_HOST = "127.0.0.12:8001"
STORED_ONLY_HOST = "127.0.0.13:8001"
PAGES_PER_HOST = 125


def populate_as_a_crawl(database: Database, now: datetime) -> None:
    """Rows as two crawl processes of one job would leave them after a few minutes: one live
    worker and one silent since five minutes, samples every 10 s (a quarter of the responses
    429s, the frontier growing), one host throttled by 429s, pages of both hosts."""
    ts = _timestamp(database)
    statements: list[tuple[str, tuple]] = []
    add = lambda sql, params: statements.append((sql, params))  # noqa: E731
    add(
        "INSERT INTO crawl_jobs (id, spider, seeds, started_at, status) VALUES (?, ?, ?, ?, ?)",
        ("job-running", "links", "[]", ts(now - timedelta(minutes=10)), "running"),
    )
    add(
        "INSERT INTO crawl_jobs (id, spider, seeds, started_at, finished_at, status, finish_reason) VALUES (?, ?, ?, ?, ?, ?, ?)",
        ("job-done", "links", "[]", ts(now - timedelta(hours=2)), ts(now - timedelta(hours=1)), "finished", "finished"),
    )
    for worker, heartbeat, minutes in (
        ("w-live", now - timedelta(seconds=2), 6),
        ("w-silent", now - timedelta(minutes=5), 1),
    ):
        samples = int(minutes * 6)
        for n in range(samples + 1):
            at = heartbeat - timedelta(seconds=10 * (samples - n))
            add(
                "INSERT INTO stats_samples (worker_id, job_id, sampled_at, stats) VALUES (?, ?, ?, ?)",
                (worker, "job-running", ts(at), json.dumps(sample_stats(n))),
            )
        add(
            "INSERT INTO workers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                worker,
                "job-running",
                "crawl-a",
                "links",
                "testhost",
                4242,
                ts(now - timedelta(minutes=10)),
                ts(heartbeat),
                "running",
                json.dumps(sample_stats(samples)),
            ),
        )
    blocked = ts(now + timedelta(seconds=600))
    for domain, state in (
        (FAST_HOST, (0.5, 0.5, 0.0, 0.0, None, "closed", 1, 5, 100, 0, 0)),
        (THROTTLED_HOST, (4.0, None, 4.0, 2.0, blocked, "closed", 0, 40, 25, 20, 20)),
    ):
        add("INSERT INTO domain_state VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (domain, *state, ts(now)))
    for domain in (FAST_HOST, THROTTLED_HOST, STORED_ONLY_HOST):
        add(
            "INSERT INTO domains (domain, robots_txt, robots_status, crawl_delay_seconds, adaptive_delay_seconds, "
            "adaptive_delay_floor_seconds, page_count) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (domain, f"User-agent: *\nDisallow: /private\n# {domain}\n", 200, 0.5, 1.5, 1.0, 3),
        )
    for host_index, domain in enumerate((FAST_HOST, THROTTLED_HOST)):
        for n in range(PAGES_PER_HOST):
            url = f"http://{domain}/p/{n}"
            status, code = ("error", 500) if n % 25 == 0 else ("fetched", 200)
            crawled = ts(now - timedelta(seconds=2 * n + host_index))
            add(
                "INSERT INTO pages (url, url_hash, surt_key, domain, status, http_status, crawled_at, discovered_at, job_id, error) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    url,
                    hashlib.sha256(url.encode()).hexdigest(),
                    url,
                    domain,
                    status,
                    code,
                    crawled,
                    crawled,
                    "job-running",
                    "HTTP 500" if status == "error" else None,
                ),
            )
    for n in range(5):
        started = now - timedelta(seconds=60 - n * 4)
        add(
            "INSERT INTO request_log (domain, url, job_id, worker_id, started_at, ended_at, http_status, outcome, delay_in_force) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                THROTTLED_HOST,
                f"http://{THROTTLED_HOST}/p/{n}",
                "job-running",
                "w-live",
                ts(started),
                ts(started + timedelta(seconds=0.1)),
                429 if n == 2 else 200,
                "fetched",
                4.0,
            ),
        )
    execute_all(database, statements)


def sample_stats(n: int) -> dict[str, int]:
    """A process's counters at its n-th heartbeat: 12 responses a beat (3 of them 429s; 8 rows
    fetched, 1 an error), the queue growing by 20 a beat."""
    return {
        "response_received_count": 12 * n,
        "pages/status/fetched": 8 * n,
        "pages/status/error": n,
        "downloader/response_status_count/200": 9 * n,
        "downloader/response_status_count/429": 3 * n,
        "retry/count": 3 * n,
        "robots/forbidden": n,
        "item_scraped_count": 9 * n,
        "storage/pending_rows": 7,
        "frontier/lease_reclaimed": 1,
        "scheduler/enqueued": 100 + 30 * n,
        "scheduler/dequeued": 10 * n,
    }


def _timestamp(database: Database):
    # Timestamps as each backend stores them (SQLite: ISO 8601 text).
    return (lambda moment: moment.isoformat()) if database.backend == "sqlite" else (lambda moment: moment)

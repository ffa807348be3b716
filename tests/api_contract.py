"""THE CONTRACT'S SHAPE of the tables crawl processes write for ``scrapy serve`` (workers,
stats_samples, domain_state, request_log, domain_controls, frontier_inbox, and the column
crawl_jobs.cancel_requested_at), as the crawl side's migration creates them.

Used only where that migration is not in the schema yet: ``ensure_contract_tables`` creates
what is missing and leaves alone what exists, so the API tests run against the real migration
wherever it is present."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import datetime, timedelta

import psycopg

from crawler.storage.schema import _TYPES
from tests.helpers import Database

CONTRACT_TABLES = {
    "workers": """CREATE TABLE workers (
        worker_id VARCHAR(64) PRIMARY KEY, job_id VARCHAR(64), crawl_id VARCHAR(255), spider VARCHAR(64),
        hostname VARCHAR(255), pid INTEGER, started_at {ts}, heartbeat_at {ts}, state VARCHAR(16), stats TEXT)""",
    "stats_samples": """CREATE TABLE stats_samples (
        id {id}, worker_id VARCHAR(64), job_id VARCHAR(64), sampled_at {ts}, stats TEXT)""",
    "domain_state": """CREATE TABLE domain_state (
        domain VARCHAR(255) PRIMARY KEY, effective_delay {real} NOT NULL, robots_delay {real},
        learned_delay {real} NOT NULL DEFAULT 0, learned_floor {real} NOT NULL DEFAULT 0, blocked_until {ts},
        circuit VARCHAR(16) NOT NULL DEFAULT 'closed', in_flight INTEGER NOT NULL DEFAULT 0,
        queued INTEGER NOT NULL DEFAULT 0, pages BIGINT NOT NULL DEFAULT 0, errors BIGINT NOT NULL DEFAULT 0,
        responses_429 BIGINT NOT NULL DEFAULT 0, updated_at {ts} NOT NULL)""",
    "request_log": """CREATE TABLE request_log (
        id {id}, domain VARCHAR(255), url TEXT, job_id VARCHAR(64), worker_id VARCHAR(64), started_at {ts},
        ended_at {ts}, http_status INTEGER, outcome VARCHAR(32), delay_in_force {real})""",
    "domain_controls": """CREATE TABLE domain_controls (
        domain VARCHAR(255) PRIMARY KEY, paused BOOLEAN, max_concurrency INTEGER, min_delay {real},
        reset_requested_at {ts}, updated_by VARCHAR(64), updated_at {ts})""",
    "frontier_inbox": """CREATE TABLE frontier_inbox (
        id {id}, url TEXT NOT NULL, spider VARCHAR(64), crawl_id VARCHAR(255), added_by VARCHAR(64),
        added_at {ts}, taken_at {ts}, taken_by VARCHAR(64))""",
}
INDEXES = (
    "CREATE INDEX idx_stats_samples_sampled_at ON stats_samples (sampled_at)",
    "CREATE INDEX idx_request_log_domain_started ON request_log (domain, started_at)",
)


def execute(database: Database, sql: str, params: tuple = ()) -> None:
    """A statement with no result (Database.query fetches one)."""
    execute_all(database, [(sql, params)])


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


def _tables(database: Database) -> set[str]:
    if database.backend == "sqlite":
        return {name for (name,) in database.query("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return {name for (name,) in database.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}


def _columns(database: Database, table: str) -> set[str]:
    if database.backend == "sqlite":
        return {row[1] for row in database.query(f"PRAGMA table_info({table})")}
    return {name for (name,) in database.query("SELECT column_name FROM information_schema.columns WHERE table_name = ?", (table,))}


def ensure_contract_tables(database: Database) -> list[str]:
    """Create the contract's tables (and column) the schema lacks; the names created."""
    types = _TYPES[database.backend]  # type: ignore[index]
    present = _tables(database)
    created = []
    for name, ddl in CONTRACT_TABLES.items():
        if name not in present:
            execute(database, ddl.format(**types))
            created.append(name)
    if "stats_samples" in created:
        for index in INDEXES:
            execute(database, index)
    if "cancel_requested_at" not in _columns(database, "crawl_jobs"):
        execute(database, f"ALTER TABLE crawl_jobs ADD COLUMN cancel_requested_at {types['ts']}")
        created.append("crawl_jobs.cancel_requested_at")
    return created


FAST_HOST = "127.0.0.11:8001"
THROTTLED_HOST = "127.0.0.12:8001"
STORED_ONLY_HOST = "127.0.0.13:8001"
PAGES_PER_HOST = 125


def populate_as_a_crawl(database: Database, now: datetime) -> None:
    """Rows as two crawl processes of one job would leave them after a few minutes: one live
    worker and one silent since five minutes, samples every 10 s (a quarter of the responses
    429s, the frontier growing), one host throttled by 429s, pages of both hosts."""
    ensure_contract_tables(database)
    ts = _timestamp(database)
    statements: list[tuple[str, tuple]] = []
    add = lambda sql, params: statements.append((sql, params))  # noqa: E731
    add("INSERT INTO crawl_jobs (id, spider, seeds, started_at, status) VALUES (?, ?, ?, ?, ?)",
            ("job-running", "links", "[]", ts(now - timedelta(minutes=10)), "running"))
    add("INSERT INTO crawl_jobs (id, spider, seeds, started_at, finished_at, status, finish_reason) VALUES (?, ?, ?, ?, ?, ?, ?)",
            ("job-done", "links", "[]", ts(now - timedelta(hours=2)), ts(now - timedelta(hours=1)), "finished", "finished"))
    for worker, heartbeat, minutes in (("w-live", now - timedelta(seconds=2), 6), ("w-silent", now - timedelta(minutes=5), 1)):
        samples = int(minutes * 6)
        for n in range(samples + 1):
            at = heartbeat - timedelta(seconds=10 * (samples - n))
            add("INSERT INTO stats_samples (worker_id, job_id, sampled_at, stats) VALUES (?, ?, ?, ?)",
                    (worker, "job-running", ts(at), json.dumps(sample_stats(n))))
        add("INSERT INTO workers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (worker, "job-running", "crawl-a", "links", "testhost", 4242, ts(now - timedelta(minutes=10)), ts(heartbeat),
                 "running", json.dumps(sample_stats(samples))))
    blocked = ts(now + timedelta(seconds=600))
    for domain, state in ((FAST_HOST, (0.5, 0.5, 0.0, 0.0, None, "closed", 1, 5, 100, 0, 0)),
                          (THROTTLED_HOST, (4.0, None, 4.0, 2.0, blocked, "closed", 0, 40, 25, 20, 20))):
        add("INSERT INTO domain_state VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (domain, *state, ts(now)))
    for domain in (FAST_HOST, THROTTLED_HOST, STORED_ONLY_HOST):
        add("INSERT INTO domains (domain, robots_txt, robots_status, crawl_delay_seconds, adaptive_delay_seconds, "
                "adaptive_delay_floor_seconds, page_count) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (domain, f"User-agent: *\nDisallow: /private\n# {domain}\n", 200, 0.5, 1.5, 1.0, 3))
    for host_index, domain in enumerate((FAST_HOST, THROTTLED_HOST)):
        for n in range(PAGES_PER_HOST):
            url = f"http://{domain}/p/{n}"
            status, code = ("error", 500) if n % 25 == 0 else ("fetched", 200)
            crawled = ts(now - timedelta(seconds=2 * n + host_index))
            add("INSERT INTO pages (url, url_hash, surt_key, domain, status, http_status, crawled_at, discovered_at, job_id, error) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (url, hashlib.sha256(url.encode()).hexdigest(), url, domain, status, code, crawled, crawled, "job-running",
                     "HTTP 500" if status == "error" else None))
    for n in range(5):
        started = now - timedelta(seconds=60 - n * 4)
        add("INSERT INTO request_log (domain, url, job_id, worker_id, started_at, ended_at, http_status, outcome, delay_in_force) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (THROTTLED_HOST, f"http://{THROTTLED_HOST}/p/{n}", "job-running", "w-live", ts(started), ts(started + timedelta(seconds=0.1)),
                 429 if n == 2 else 200, "fetched", 4.0))
    execute_all(database, statements)


def sample_stats(n: int) -> dict[str, int]:
    """A process's counters at its n-th heartbeat: 12 responses a beat (3 of them 429s), the
    queue growing by 20 a beat."""
    return {
        "response_received_count": 12 * n,
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

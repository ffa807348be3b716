"""THE CONTRACT'S SHAPE of the tables crawl processes write for ``scrapy serve`` (workers,
stats_samples, domain_state, request_log, domain_controls, frontier_inbox, and the column
crawl_jobs.cancel_requested_at), as the crawl side's migration creates them.

Used only where that migration is not in the schema yet: ``ensure_contract_tables`` creates
what is missing and leaves alone what exists, so the API tests run against the real migration
wherever it is present."""

from __future__ import annotations

import sqlite3

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
        domain VARCHAR(255) PRIMARY KEY, effective_delay {real}, robots_delay {real}, learned_delay {real},
        learned_floor {real}, blocked_until {ts}, circuit VARCHAR(16), in_flight INTEGER, queued INTEGER,
        pages INTEGER, errors INTEGER, responses_429 INTEGER, updated_at {ts})""",
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
    if database.backend == "sqlite":
        with sqlite3.connect(database.url.partition("://")[2][1:]) as connection:
            connection.execute(sql, params)
        return
    with psycopg.connect(database.url, autocommit=True) as connection:
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

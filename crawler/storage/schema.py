"""The versioned schema, written once for both SQL dialects.

``{id}``, ``{ts}``, ``{blob}``, ``{real}`` and ``{big_text}`` stand for the column types that
differ between SQLite and PostgreSQL. Large values are compressed with lz4 in PostgreSQL (14 or
later), whose default, pglz, writes them several times slower. A migration is appended, never
edited, once it has been released.
"""

from __future__ import annotations

from typing import Literal

Dialect = Literal["sqlite", "postgresql"]

_TYPES: dict[Dialect, dict[str, str]] = {
    "sqlite": {
        "id": "INTEGER PRIMARY KEY AUTOINCREMENT",
        "ts": "TEXT",
        "blob": "BLOB",
        "real": "REAL",
        "big_text": "TEXT",
    },
    "postgresql": {
        "id": "BIGSERIAL PRIMARY KEY",
        "ts": "TIMESTAMPTZ",
        "blob": "BYTEA COMPRESSION lz4",
        "real": "DOUBLE PRECISION",
        "big_text": "TEXT COMPRESSION lz4",
    },
}

PAGE_COLUMNS: tuple[str, ...] = (
    "url",
    "url_hash",
    "surt_key",
    "domain",
    "status",
    "http_status",
    "content_type",
    "content_length",
    "content_hash",
    "title",
    "description",
    "text",
    "body",
    "body_truncated",
    "noindex",
    "links_count",
    "links",
    "final_url",
    "redirect_count",
    "etag",
    "last_modified",
    "server_date",
    "crawled_at",
    "crawl_duration_ms",
    "error",
    "depth",
    "priority",
    "discovered_via",
    "referrer",
    "sitemap_lastmod",
    "sitemap_changefreq",
    "sitemap_priority",
    "job_id",
    "next_crawl_at",
    "recrawl_interval_seconds",
    "visit_count",
    "change_count",
    "followed_links",
    "warc_filename",
    "warc_offset",
    "warc_payload_digest",
    "simhash",
    "duplicate_of",
)
"""Columns of seed 000's target table and seed 002's crawled_pages together, plus the
crawl context (depth, priority, how the URL was found, the job), the revisit schedule and where
the copy is archived."""

VISIT_COLUMNS: tuple[str, ...] = (
    "url",
    "surt_key",
    "domain",
    "status",
    "http_status",
    "error",
    "crawled_at",
    "crawl_duration_ms",
    "job_id",
)
"""What any visit of a page writes; a failed visit writes only these (and its error count)."""

CONTENT_COLUMNS: tuple[str, ...] = (
    "content_type",
    "content_length",
    "content_hash",
    "title",
    "description",
    "text",
    "body",
    "body_truncated",
    "noindex",
    "links_count",
    "links",
    "followed_links",
    "simhash",
    "duplicate_of",
    "final_url",
    "redirect_count",
    "etag",
    "last_modified",
    "server_date",
    "warc_filename",
    "warc_offset",
    "warc_payload_digest",
)
"""What a page says, and where that copy is archived: kept from the last good copy by a failed
visit and by an unchanged one."""

CONTENT_KEEPING_STATUSES = ("error", "unchanged")

SITEMAP_ENTRY_COLUMNS: tuple[str, ...] = (
    "sitemap_url",
    "url",
    "url_hash",
    "lastmod",
    "changefreq",
    "priority",
    "job_id",
    "discovered_at",
)

MIGRATIONS: tuple[str, ...] = (
    # 1: the first schema
    """
    CREATE TABLE pages (
        id {id},
        url TEXT NOT NULL,
        url_hash VARCHAR(64) NOT NULL UNIQUE,
        surt_key TEXT NOT NULL,
        domain VARCHAR(255) NOT NULL,
        status VARCHAR(32) NOT NULL,
        http_status INTEGER,
        content_type TEXT,
        content_length BIGINT,
        content_hash VARCHAR(64),
        title TEXT,
        description TEXT,
        text {big_text},
        body {blob},
        body_truncated BOOLEAN NOT NULL DEFAULT FALSE,
        noindex BOOLEAN NOT NULL DEFAULT FALSE,
        links_count INTEGER NOT NULL DEFAULT 0,
        links {big_text},
        final_url TEXT,
        redirect_count INTEGER NOT NULL DEFAULT 0,
        etag TEXT,
        last_modified TEXT,
        server_date {ts},
        crawled_at {ts} NOT NULL,
        crawl_duration_ms INTEGER,
        error TEXT,
        error_count INTEGER NOT NULL DEFAULT 0,
        depth INTEGER NOT NULL DEFAULT 0,
        priority INTEGER NOT NULL DEFAULT 0,
        discovered_via VARCHAR(16),
        referrer TEXT,
        sitemap_lastmod {ts},
        sitemap_changefreq VARCHAR(16),
        sitemap_priority {real},
        job_id VARCHAR(64),
        discovered_at {ts} NOT NULL,
        next_crawl_at {ts}
    );
    CREATE INDEX idx_pages_domain ON pages (domain);
    CREATE INDEX idx_pages_crawled_at ON pages (crawled_at);
    CREATE INDEX idx_pages_status ON pages (status);
    CREATE INDEX idx_pages_surt ON pages (surt_key);
    CREATE TABLE domains (
        domain VARCHAR(255) PRIMARY KEY,
        robots_txt {big_text},
        robots_status INTEGER,
        robots_fetched_at {ts},
        robots_expires_at {ts},
        crawl_delay_seconds {real},
        adaptive_delay_seconds {real} NOT NULL DEFAULT 0,
        adaptive_delay_floor_seconds {real} NOT NULL DEFAULT 0,
        page_count INTEGER NOT NULL DEFAULT 0,
        is_allowed BOOLEAN NOT NULL DEFAULT TRUE,
        updated_at {ts}
    );
    CREATE TABLE robots_decisions (
        id {id},
        url TEXT NOT NULL,
        domain VARCHAR(255) NOT NULL,
        user_agent TEXT NOT NULL,
        allowed BOOLEAN NOT NULL,
        matched_rule TEXT,
        crawl_delay_seconds {real},
        reason TEXT,
        decided_at {ts} NOT NULL,
        job_id VARCHAR(64)
    );
    CREATE INDEX idx_robots_decisions_domain ON robots_decisions (domain);
    CREATE TABLE sitemap_entries (
        id {id},
        sitemap_url TEXT NOT NULL,
        url TEXT NOT NULL,
        url_hash VARCHAR(64) NOT NULL,
        lastmod {ts},
        changefreq VARCHAR(16),
        priority {real},
        job_id VARCHAR(64),
        discovered_at {ts} NOT NULL,
        UNIQUE (sitemap_url, url_hash)
    );
    CREATE TABLE crawl_jobs (
        id VARCHAR(64) PRIMARY KEY,
        spider VARCHAR(64) NOT NULL,
        seeds TEXT NOT NULL,
        started_at {ts} NOT NULL,
        finished_at {ts},
        status VARCHAR(16) NOT NULL,
        finish_reason TEXT,
        pages_fetched INTEGER NOT NULL DEFAULT 0,
        pages_failed INTEGER NOT NULL DEFAULT 0,
        rows_written INTEGER NOT NULL DEFAULT 0,
        stats TEXT
    );
    """,
    # One run of a crawl at a time: the lock of each crawl id, its holder and heartbeat.
    """
    CREATE TABLE crawl_locks (
        crawl_id VARCHAR(255) PRIMARY KEY,
        holder VARCHAR(64) NOT NULL,
        hostname VARCHAR(255),
        pid INTEGER,
        acquired_at {ts} NOT NULL,
        heartbeat_at {ts} NOT NULL
    );
    """,
    # Observability and control of running crawls: what crawl processes write (workers and
    # their stats samples, per-domain state, the request log), what they read (domain
    # controls, the inbox of URLs, a job's cancel flag).
    """
    CREATE TABLE workers (
        worker_id VARCHAR(64) PRIMARY KEY,
        job_id VARCHAR(64) NOT NULL,
        crawl_id VARCHAR(255),
        spider VARCHAR(64) NOT NULL,
        hostname VARCHAR(255) NOT NULL,
        pid INTEGER NOT NULL,
        started_at {ts} NOT NULL,
        heartbeat_at {ts} NOT NULL,
        state VARCHAR(16) NOT NULL,
        stats TEXT
    );
    CREATE INDEX idx_workers_heartbeat_at ON workers (heartbeat_at);
    CREATE TABLE stats_samples (
        id {id},
        worker_id VARCHAR(64) NOT NULL,
        job_id VARCHAR(64),
        sampled_at {ts} NOT NULL,
        stats TEXT NOT NULL
    );
    CREATE INDEX idx_stats_samples_sampled_at ON stats_samples (sampled_at);
    CREATE TABLE domain_state (
        domain VARCHAR(255) PRIMARY KEY,
        effective_delay {real} NOT NULL,
        robots_delay {real},
        learned_delay {real} NOT NULL DEFAULT 0,
        learned_floor {real} NOT NULL DEFAULT 0,
        blocked_until {ts},
        circuit VARCHAR(16) NOT NULL DEFAULT 'closed',
        in_flight INTEGER NOT NULL DEFAULT 0,
        queued INTEGER NOT NULL DEFAULT 0,
        pages BIGINT NOT NULL DEFAULT 0,
        errors BIGINT NOT NULL DEFAULT 0,
        responses_429 BIGINT NOT NULL DEFAULT 0,
        updated_at {ts} NOT NULL
    );
    CREATE INDEX idx_domain_state_updated_at ON domain_state (updated_at);
    CREATE TABLE request_log (
        id {id},
        domain VARCHAR(255) NOT NULL,
        url TEXT NOT NULL,
        job_id VARCHAR(64),
        worker_id VARCHAR(64),
        started_at {ts} NOT NULL,
        ended_at {ts},
        http_status INTEGER,
        outcome VARCHAR(64) NOT NULL,
        delay_in_force {real}
    );
    CREATE INDEX idx_request_log_domain_started_at ON request_log (domain, started_at);
    CREATE TABLE domain_controls (
        domain VARCHAR(255) PRIMARY KEY,
        paused BOOLEAN NOT NULL DEFAULT FALSE,
        max_concurrency INTEGER,
        min_delay {real},
        reset_requested_at {ts},
        updated_by VARCHAR(64),
        updated_at {ts} NOT NULL
    );
    CREATE TABLE frontier_inbox (
        id {id},
        url TEXT NOT NULL,
        spider VARCHAR(64),
        crawl_id VARCHAR(255),
        added_by VARCHAR(64),
        added_at {ts} NOT NULL,
        taken_at {ts},
        taken_by VARCHAR(64)
    );
    CREATE INDEX idx_frontier_inbox_untaken ON frontier_inbox (id) WHERE taken_at IS NULL;
    ALTER TABLE crawl_jobs ADD COLUMN cancel_requested_at {ts};
    """,
    # scrapy serve: users, sessions kept in the database when there is no Redis, the record of
    # admin actions, and indexes for the API's keyset pages of rows (by time, by domain, by status)
    """
    CREATE TABLE users (
        username VARCHAR(64) PRIMARY KEY,
        role VARCHAR(16) NOT NULL,
        password_hash TEXT NOT NULL,
        created_at {ts} NOT NULL,
        updated_at {ts} NOT NULL
    );
    CREATE TABLE sessions (
        token_hash VARCHAR(64) PRIMARY KEY,
        username VARCHAR(64) NOT NULL,
        role VARCHAR(16) NOT NULL,
        created_at {ts} NOT NULL,
        expires_at {ts} NOT NULL
    );
    CREATE INDEX idx_sessions_expires_at ON sessions (expires_at);
    CREATE TABLE admin_actions (
        id {id},
        username VARCHAR(64) NOT NULL,
        action VARCHAR(64) NOT NULL,
        target TEXT,
        detail TEXT,
        acted_at {ts} NOT NULL
    );
    CREATE INDEX idx_admin_actions_acted_at ON admin_actions (acted_at);
    CREATE INDEX idx_pages_crawled_id ON pages (crawled_at, id);
    CREATE INDEX idx_pages_domain_crawled_id ON pages (domain, crawled_at, id);
    CREATE INDEX idx_pages_status_crawled_id ON pages (status, crawled_at, id)
    """,
    # the revisit schedule, and what retention deletes by age
    """
    ALTER TABLE pages ADD COLUMN recrawl_interval_seconds {real};
    ALTER TABLE pages ADD COLUMN visit_count INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE pages ADD COLUMN change_count INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE pages ADD COLUMN followed_links {big_text};
    CREATE INDEX idx_robots_decisions_decided_at ON robots_decisions (decided_at);
    CREATE INDEX idx_crawl_jobs_finished_at ON crawl_jobs (finished_at)
    """,
    # the dashboard's domain table, longest delays first: its top 100 read from an index rather
    # than every domain's snapshot sorted on each refresh
    """
    CREATE INDEX idx_domain_state_delay ON domain_state (effective_delay DESC, domain)
    """,
    # sessions of scrapy serve name their user and the user's session stamp, no longer a copy of
    # the role: the role is read at each request, and a new stamp (a new password, the user's
    # sessions ended) ends every session made before it. The sessions of before end here.
    """
    ALTER TABLE users ADD COLUMN session_stamp VARCHAR(32) NOT NULL DEFAULT '';
    DROP TABLE sessions;
    CREATE TABLE sessions (
        token_hash VARCHAR(64) PRIMARY KEY,
        username VARCHAR(64) NOT NULL,
        session_stamp VARCHAR(32) NOT NULL,
        created_at {ts} NOT NULL,
        expires_at {ts} NOT NULL
    );
    CREATE INDEX idx_sessions_expires_at ON sessions (expires_at);
    CREATE INDEX idx_sessions_username ON sessions (username)
    """,
    # where each page's copy is in the crawl's WARC files (CRAWLER_WARC_DIR), and its payload's
    # digest, which a re-crawl compares to write a revisit record instead of the payload again
    """
    ALTER TABLE pages ADD COLUMN warc_filename TEXT;
    ALTER TABLE pages ADD COLUMN warc_offset BIGINT;
    ALTER TABLE pages ADD COLUMN warc_payload_digest VARCHAR(64)
    """,
    # near-duplicates: the SimHash of a page's text, and the page a duplicate is the twin of
    """
    ALTER TABLE pages ADD COLUMN simhash VARCHAR(16);
    ALTER TABLE pages ADD COLUMN duplicate_of TEXT
    """,
    # cold domains: the tail of a long queue of a domain that will not be ready soon, out of
    # Redis (crawler.frontier.spill); each row under its frontier shard's run, read back in
    # priority order
    """
    CREATE TABLE frontier_spill (
        id {id},
        crawl_id VARCHAR(255) NOT NULL,
        run VARCHAR(255) NOT NULL,
        domain VARCHAR(255) NOT NULL,
        priority INTEGER NOT NULL,
        request {big_text} NOT NULL
    );
    CREATE INDEX idx_frontier_spill_domain ON frontier_spill (run, domain, priority DESC, id);
    CREATE INDEX idx_frontier_spill_crawl ON frontier_spill (crawl_id, run)
    """,
)


def migration_statements(version: int, dialect: Dialect) -> list[str]:
    """The statements of migration ``version`` (1-based) in ``dialect``."""
    sql = MIGRATIONS[version - 1].format(**_TYPES[dialect])
    return [statement.strip() for statement in sql.split(";") if statement.strip()]


DOMAIN_COLUMNS: tuple[str, ...] = (
    "domain",
    "adaptive_delay_seconds",
    "adaptive_delay_floor_seconds",
    "crawl_delay_seconds",
    "updated_at",
)

ROBOTS_COLUMNS: tuple[str, ...] = (
    "domain",
    "robots_txt",
    "robots_status",
    "robots_fetched_at",
    "robots_expires_at",
    "crawl_delay_seconds",
    "is_allowed",
    "updated_at",
)

ROBOTS_DECISION_COLUMNS: tuple[str, ...] = (
    "url",
    "domain",
    "user_agent",
    "allowed",
    "matched_rule",
    "crawl_delay_seconds",
    "reason",
    "decided_at",
    "job_id",
)


WORKER_COLUMNS: tuple[str, ...] = (
    "worker_id",
    "job_id",
    "crawl_id",
    "spider",
    "hostname",
    "pid",
    "started_at",
    "heartbeat_at",
    "state",
    "stats",
)
STATS_SAMPLE_COLUMNS: tuple[str, ...] = ("worker_id", "job_id", "sampled_at", "stats")
DOMAIN_STATE_COLUMNS: tuple[str, ...] = (
    "domain",
    "effective_delay",
    "robots_delay",
    "learned_delay",
    "learned_floor",
    "blocked_until",
    "circuit",
    "in_flight",
    "queued",
    "pages",
    "errors",
    "responses_429",
    "updated_at",
)
DOMAIN_STATE_COUNTERS: tuple[str, ...] = ("pages", "errors", "responses_429")
"""Rows carry what one process counted since its last snapshot; the table holds the sums."""
REQUEST_LOG_COLUMNS: tuple[str, ...] = (
    "domain",
    "url",
    "job_id",
    "worker_id",
    "started_at",
    "ended_at",
    "http_status",
    "outcome",
    "delay_in_force",
)


def insert_sql(
    table: str,
    columns: tuple[str, ...],
    placeholder: str,
    *,
    key: str | None = None,
    update: tuple[str, ...] = (),
    extra: tuple[str, ...] = (),
) -> str:
    """``INSERT``; with ``key``, updating ``update`` and the ``extra`` assignments on a
    conflict (or nothing if none)."""
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join([placeholder] * len(columns))})"
    if key is None:
        return sql
    if not update and not extra:
        return f"{sql} ON CONFLICT ({key}) DO NOTHING"
    updates = ", ".join([*(f"{c} = excluded.{c}" for c in update), *extra])
    return f"{sql} ON CONFLICT ({key}) DO UPDATE SET {updates}"


UPSERT_KEYS: dict[str, tuple[str, ...]] = {
    "pages": ("url_hash",),
    "new_pages": ("url_hash",),
    "sitemap_entries": ("sitemap_url", "url_hash"),
    "domains": ("domain",),
    "robots": ("domain",),
    "workers": ("worker_id",),
    "domain_state": ("domain",),
}
"""The conflict key of each kind of row written as an upsert."""


def _row_columns() -> dict[str, tuple[str, ...]]:
    pages = (*PAGE_COLUMNS, "discovered_at", "error_count")
    return {
        "pages": pages,
        "new_pages": pages,
        "sitemap_entries": SITEMAP_ENTRY_COLUMNS,
        "domains": DOMAIN_COLUMNS,
        "robots": ROBOTS_COLUMNS,
        "workers": WORKER_COLUMNS,
        "domain_state": DOMAIN_STATE_COLUMNS,
    }


def upsert_key_positions() -> dict[str, tuple[int, ...]]:
    """Where each upserted kind's key sits in its rows. Rows written in the order of their keys
    take their row locks in one order in every process: two workers' batches updating the same
    domains in different orders deadlocked on PostgreSQL (a soak of three workers, after a pause)."""
    columns = _row_columns()
    return {kind: tuple(columns[kind].index(column) for column in key) for kind, key in UPSERT_KEYS.items()}


def write_statements(placeholder: str) -> dict[str, str]:
    """The statement that writes each kind of row of a ``Batch``, in writing order."""
    pages = _row_columns()["pages"]
    key = {kind: ", ".join(columns) for kind, columns in UPSERT_KEYS.items()}
    return {
        # The first discovery time is kept; error_count counts consecutive failed fetches; a
        # failed or unchanged visit keeps the last good content.
        "pages": insert_sql(
            "pages",
            pages,
            placeholder,
            key=key["pages"],
            update=VISIT_COLUMNS,
            extra=(
                *(_kept_when(c, CONTENT_KEEPING_STATUSES) for c in CONTENT_COLUMNS),
                *(
                    _kept_when(c, ("error",))
                    for c in PAGE_COLUMNS
                    if c not in (*VISIT_COLUMNS, *CONTENT_COLUMNS, "url_hash")
                ),
                "error_count = CASE WHEN excluded.status = 'error' THEN pages.error_count + 1 ELSE 0 END",
            ),
        ),
        # A URL skipped now must not replace what an earlier crawl stored.
        "new_pages": insert_sql("pages", pages, placeholder, key=key["new_pages"]),
        "sitemap_entries": insert_sql(
            "sitemap_entries",
            SITEMAP_ENTRY_COLUMNS,
            placeholder,
            key=key["sitemap_entries"],
            update=("lastmod", "changefreq", "priority", "job_id"),
        ),
        "domains": insert_sql("domains", DOMAIN_COLUMNS, placeholder, key=key["domains"], update=DOMAIN_COLUMNS[1:]),
        "robots": insert_sql("domains", ROBOTS_COLUMNS, placeholder, key=key["robots"], update=ROBOTS_COLUMNS[1:]),
        "robots_decisions": insert_sql("robots_decisions", ROBOTS_DECISION_COLUMNS, placeholder),
        "workers": insert_sql("workers", WORKER_COLUMNS, placeholder, key=key["workers"], update=WORKER_COLUMNS[1:]),
        "stats_samples": insert_sql("stats_samples", STATS_SAMPLE_COLUMNS, placeholder),
        "domain_state": insert_sql(
            "domain_state",
            DOMAIN_STATE_COLUMNS,
            placeholder,
            key=key["domain_state"],
            update=tuple(c for c in DOMAIN_STATE_COLUMNS[1:] if c not in DOMAIN_STATE_COUNTERS),
            extra=tuple(f"{c} = domain_state.{c} + excluded.{c}" for c in DOMAIN_STATE_COUNTERS),
        ),
        "request_log": insert_sql("request_log", REQUEST_LOG_COLUMNS, placeholder),
    }


def _kept_when(column: str, statuses: tuple[str, ...]) -> str:
    """The assignment keeping the stored ``column`` when the new row's status is one of ``statuses``."""
    listed = ", ".join(f"'{status}'" for status in statuses)
    return f"{column} = CASE WHEN excluded.status IN ({listed}) THEN pages.{column} ELSE excluded.{column} END"

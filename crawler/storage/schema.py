"""The versioned schema, written once for both SQL dialects.

``{id}``, ``{ts}``, ``{blob}``, ``{real}`` and ``{big_text}`` stand for the column types that
differ between SQLite and PostgreSQL. Large values are compressed with lz4 in PostgreSQL (14 or
later): its default, pglz, made 20 KB rows three times slower to write. A migration is appended, never edited, once it has been released.
"""

from __future__ import annotations

from typing import Literal

Dialect = Literal["sqlite", "postgresql"]

_TYPES: dict[Dialect, dict[str, str]] = {
    "sqlite": {"id": "INTEGER PRIMARY KEY AUTOINCREMENT", "ts": "TEXT", "blob": "BLOB", "real": "REAL", "big_text": "TEXT"},
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
)
"""Columns of seed 000's target table and seed 002's crawled_pages together, plus the
crawl context (depth, priority, how the URL was found, the job)."""

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
)


def migration_statements(version: int, dialect: Dialect) -> list[str]:
    """The statements of migration ``version`` (1-based) in ``dialect``."""
    sql = MIGRATIONS[version - 1].format(**_TYPES[dialect])
    return [statement.strip() for statement in sql.split(";") if statement.strip()]


def upsert_pages_sql(placeholder: str) -> str:
    """Insert pages or update them on ``url_hash``; the first discovery time is kept and
    ``error_count`` counts consecutive failed fetches."""
    columns = ", ".join((*PAGE_COLUMNS, "discovered_at"))
    values = ", ".join([placeholder] * (len(PAGE_COLUMNS) + 1))
    updates = ", ".join(f"{c} = excluded.{c}" for c in PAGE_COLUMNS if c != "url_hash")
    return (
        f"INSERT INTO pages ({columns}) VALUES ({values}) "
        f"ON CONFLICT (url_hash) DO UPDATE SET {updates}, "
        "error_count = CASE WHEN excluded.status = 'error' THEN pages.error_count + 1 ELSE 0 END"
    )


def upsert_sitemap_entries_sql(placeholder: str) -> str:
    columns = ", ".join(SITEMAP_ENTRY_COLUMNS)
    values = ", ".join([placeholder] * len(SITEMAP_ENTRY_COLUMNS))
    updates = ", ".join(f"{c} = excluded.{c}" for c in ("lastmod", "changefreq", "priority", "job_id"))
    return (
        f"INSERT INTO sitemap_entries ({columns}) VALUES ({values}) "
        f"ON CONFLICT (sitemap_url, url_hash) DO UPDATE SET {updates}"
    )


DOMAIN_COLUMNS: tuple[str, ...] = (
    "domain",
    "adaptive_delay_seconds",
    "adaptive_delay_floor_seconds",
    "crawl_delay_seconds",
    "updated_at",
)


def upsert_domains_sql(placeholder: str) -> str:
    columns = ", ".join(DOMAIN_COLUMNS)
    values = ", ".join([placeholder] * len(DOMAIN_COLUMNS))
    updates = ", ".join(f"{c} = excluded.{c}" for c in DOMAIN_COLUMNS[1:])
    return f"INSERT INTO domains ({columns}) VALUES ({values}) ON CONFLICT (domain) DO UPDATE SET {updates}"


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


def upsert_robots_sql(placeholder: str) -> str:
    columns = ", ".join(ROBOTS_COLUMNS)
    values = ", ".join([placeholder] * len(ROBOTS_COLUMNS))
    updates = ", ".join(f"{c} = excluded.{c}" for c in ROBOTS_COLUMNS[1:])
    return f"INSERT INTO domains ({columns}) VALUES ({values}) ON CONFLICT (domain) DO UPDATE SET {updates}"


def insert_robots_decisions_sql(placeholder: str) -> str:
    columns = ", ".join(ROBOTS_DECISION_COLUMNS)
    values = ", ".join([placeholder] * len(ROBOTS_DECISION_COLUMNS))
    return f"INSERT INTO robots_decisions ({columns}) VALUES ({values})"


def insert_new_pages_sql(placeholder: str) -> str:
    """Pages rows that must not replace what an earlier crawl stored (a URL skipped now)."""
    columns = ", ".join((*PAGE_COLUMNS, "discovered_at"))
    values = ", ".join([placeholder] * (len(PAGE_COLUMNS) + 1))
    return f"INSERT INTO pages ({columns}) VALUES ({values}) ON CONFLICT (url_hash) DO NOTHING"


def write_statements(placeholder: str) -> dict[str, str]:
    """The statement that writes each kind of row of a ``Batch``, in writing order."""
    return {
        "pages": upsert_pages_sql(placeholder),
        "new_pages": insert_new_pages_sql(placeholder),
        "sitemap_entries": upsert_sitemap_entries_sql(placeholder),
        "domains": upsert_domains_sql(placeholder),
        "robots": upsert_robots_sql(placeholder),
        "robots_decisions": insert_robots_decisions_sql(placeholder),
    }

"""What the soak reads from the crawl's PostgreSQL, straight to the server (not through the
proxy the workers use, which the soak cuts): the crawler's own stamps of requests, table sizes,
connections, and the pages stored."""

from __future__ import annotations

from collections.abc import Iterable

import psycopg

from bench.realweb import ServedRequest
from bench.soak_checks import Stamp, nearest

TABLES = (
    "pages",
    "request_log",
    "stats_samples",
    "workers",
    "domain_state",
    "crawl_jobs",
    "robots_decisions",
    "frontier_inbox",
)


class SoakDatabase:
    def __init__(self, url: str, port: int):
        self.url = url
        self.port = port
        """The port the crawl's URLs carry (the web server's)."""

    def _connect(self) -> psycopg.Connection:
        return psycopg.connect(self.url, connect_timeout=5, autocommit=True)

    def stamps(self, requests: Iterable[ServedRequest], window: float = 5.0) -> list[Stamp | None]:
        """For each request the server saw, the crawler's stamp of it (the logged request of
        its URL that left nearest to when the server read it); None when none was logged."""
        found: list[Stamp | None] = []
        with self._connect() as connection:
            for served in requests:
                rows = connection.execute(
                    "SELECT EXTRACT(EPOCH FROM started_at)::float8, EXTRACT(EPOCH FROM ended_at)::float8"
                    " FROM request_log WHERE domain = %s AND url = %s"
                    " AND started_at BETWEEN to_timestamp(%s) AND to_timestamp(%s)",
                    (
                        f"{served.host}:{self.port}",
                        f"http://{served.host}:{self.port}{served.path}",
                        served.start - window,
                        served.start + window,
                    ),
                ).fetchall()
                ended = dict(rows)
                departed = nearest(list(ended), served.start)
                found.append(None if departed is None else Stamp(departed, ended[departed]))
        return found

    def table_rows(self) -> dict[str, int]:
        """Rows of the tables that grow with a crawl (absent ones left out)."""
        with self._connect() as connection:
            present = {row[0] for row in connection.execute("SELECT tablename FROM pg_tables").fetchall()}
            return {
                table: connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]  # type: ignore[index]
                for table in TABLES
                if table in present
            }

    def database_mb(self) -> float:
        with self._connect() as connection:
            size = connection.execute("SELECT pg_database_size(current_database())").fetchone()[0]  # type: ignore[index]
        return size / 2**20

    def connections(self) -> int:
        """Client connections to the server, the soak's own left out."""
        with self._connect() as connection:
            return connection.execute(
                "SELECT COUNT(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
            ).fetchone()[0]  # type: ignore[index]

    def page_paths(self) -> set[tuple[str, str]]:
        """(host, path) of every row of ``pages``."""
        prefix = "http://"
        with self._connect() as connection:
            urls = [row[0] for row in connection.execute("SELECT url FROM pages").fetchall()]
        paths = set()
        for url in urls:
            authority, _, path = url.removeprefix(prefix).partition("/")
            paths.add((authority.rsplit(":", 1)[0], "/" + path))
        return paths

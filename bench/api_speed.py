"""How fast ``scrapy serve`` answers with 100,000 pages and 10,000 domains in PostgreSQL:
p50/p95 of 200 sequential requests per route (over HTTP, as the dashboard asks), and the
database time of one dashboard refresh (the SQL of /api/stats, /api/stats/timeseries,
/api/domains and /api/jobs, timed around each statement in the API's own process code).

Stock Scrapy has no API to compare with; the figures stand against the acceptance bounds
(100 ms p95 per route, 50 ms of database time per refresh)."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from scrapy.settings import Settings

import crawler.settings
from bench.api_common import UNLIMITED, scratch_database
from crawler.api.context import STORED_ONLY_RECOUNT_SECONDS, ApiContext
from crawler.api.overview import gather, recent_samples
from crawler.api.serve_config import ServeConfig
from crawler.storage import open_backend
from crawler.storage.domains import StoredOnlyCount, domains_page
from crawler.storage.jobs import list_jobs
from tests.api_contract import sample_stats
from tests.api_server import ServeProcess, create_users, migrate
from tests.helpers import Database

DASHBOARD_DOMAINS = 100
DASHBOARD_REFRESH_SECONDS = 4.0  # REFRESH_MS of crawler/api/static/app.js


def fill(database: Database, pages: int, domains: int) -> None:
    """Pages spread over the domains, one snapshot per domain, four workers sampled every 5 s for 15 minutes."""
    with psycopg.connect(database.url) as connection:
        connection.execute(
            """INSERT INTO pages (url, url_hash, surt_key, domain, status, http_status, crawled_at, discovered_at, job_id, title)
            SELECT 'http://d' || (n %% %(d)s) || '.example/p/' || n, md5(n::text) || md5((n + 1)::text), 'x', 'd' || (n %% %(d)s) || '.example',
                   CASE WHEN n %% 20 = 0 THEN 'error' ELSE 'fetched' END, CASE WHEN n %% 20 = 0 THEN 503 ELSE 200 END,
                   now() - n * interval '1 second', now() - n * interval '1 second', 'bench-job', 'Page ' || n
            FROM generate_series(1, %(p)s) n""",
            {"d": domains, "p": pages},
        )
        connection.execute(
            """INSERT INTO domain_state SELECT 'd' || n || '.example', 1 + (n %% 7), 1, (n %% 13) * 0.5, (n %% 13) * 0.25,
                   CASE WHEN n %% 50 = 0 THEN now() + interval '5 minutes' END, 'closed', n %% 3, n %% 100, 10, n %% 11, n %% 17, now()
            FROM generate_series(0, %(d)s - 1) n""",
            {"d": domains},
        )
        connection.execute(
            """INSERT INTO domains (domain, robots_txt, robots_status, crawl_delay_seconds, page_count)
            SELECT 'd' || n || '.example', 'User-agent: *' || chr(10) || 'Disallow: /private', 200, 1, 10 FROM generate_series(0, %(d)s - 1) n""",
            {"d": domains},
        )
        now = time.time()
        for worker in range(4):
            beats = 15 * 12
            with connection.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO stats_samples (worker_id, job_id, sampled_at, stats) VALUES (%s, 'bench-job', to_timestamp(%s), %s)",
                    [(f"w{worker}", now - 5 * (beats - n), json.dumps(sample_stats(n))) for n in range(beats + 1)],
                )
            connection.execute(
                "INSERT INTO workers VALUES (%s, 'bench-job', 'bench', 'links', 'bench', 1, now(), now(), 'running', %s)",
                (f"w{worker}", json.dumps(sample_stats(beats))),
            )
        connection.execute(
            "INSERT INTO crawl_jobs (id, spider, seeds, started_at, status) VALUES ('bench-job', 'links', '[]', now(), 'running')"
        )
    with psycopg.connect(database.url, autocommit=True) as connection:
        connection.execute("VACUUM ANALYZE")


def timed_requests(server: ServeProcess, paths: list[str], requests: int) -> list[float]:
    client = server.client().login("admin")
    client.get(paths[0])  # warm
    durations = []
    for n in range(requests):
        start = time.perf_counter()
        reply = client.get(paths[n % len(paths)])
        durations.append(time.perf_counter() - start)
        assert reply.status == 200, reply.body[:300]
    return durations


def deep_page_paths(server: ServeProcess, base: str, pages: int) -> list[str]:
    """Cursors of the first ``pages`` pages, so that requests go deep as well as shallow."""
    client = server.client().login("admin")
    paths, cursor = [base], None
    for _ in range(pages - 1):
        cursor = client.get(paths[-1]).json()["next_cursor"]
        if not cursor:
            break
        paths.append(f"{base}&cursor={cursor}")
    return paths


class StatementTimer:
    """Wraps a backend's ``execute`` to add up the time its statements take, one at a time:
    ``gather`` runs several at once, and a statement waiting for one of the pool's connections
    would count its wait as database time."""

    def __init__(self, backend: Any):
        self.total = 0.0
        self.count = 0
        self._execute = backend.execute
        self._alone = asyncio.Lock()
        backend.execute = self

    async def __call__(self, sql: str, params: Any = ()) -> Any:
        async with self._alone:
            start = time.perf_counter()
            try:
                return await self._execute(sql, params)
            finally:
                self.total += time.perf_counter() - start
                self.count += 1


async def open_services(database: Database) -> ApiContext:
    settings = Settings(vars(crawler.settings))
    settings.set("DATABASE_URL", database.url)
    settings.set("REDIS_URL", "")
    return await ApiContext.open(ServeConfig.from_settings(settings), settings)


async def refresh_database_time(database: Database, refreshes: int) -> list[tuple[float, int]]:
    found = await open_services(database)
    timer = StatementTimer(found.db)
    results = []
    try:
        for _ in range(refreshes + 1):
            timer.total, timer.count = 0.0, 0
            now = time.time()
            # The routes of one refresh one after another (the timer times each statement alone).
            await gather(found)
            await recent_samples(found, datetime.fromtimestamp(now - 15 * 60 - 20, UTC))
            await domains_page(found.db, "delay", True, DASHBOARD_DOMAINS, 0, None, found.stored_only)
            await list_jobs(found.db, 20)
            results.append((timer.total, timer.count))
    finally:
        await found.close()
    return results[1:]  # the first warms the pool


async def stored_only_recount_time(database: Database, recounts: int) -> float:
    """The count /api/domains keeps for STORED_ONLY_RECOUNT_SECONDS, so that most refreshes
    do without it: its own time, for its share of a refresh."""
    found = await open_services(database)
    timer = StatementTimer(found.db)
    recount = StoredOnlyCount(0)  # kept for no time: counts on every call
    times = []
    try:
        for _ in range(recounts + 1):
            timer.total = 0.0
            await recount.get(found.db)
            times.append(timer.total)
    finally:
        await found.close()
    return statistics.median(times[1:])


async def round_trip(database: Database, count: int) -> float:
    db = open_backend(database.url)
    await db.open()
    try:
        times = []
        for _ in range(count):
            start = time.perf_counter()
            await db.ping()
            times.append(time.perf_counter() - start)
    finally:
        await db.close()
    return statistics.median(times)


def summary(name: str, durations: list[float]) -> str:
    ordered = sorted(durations)
    p95 = ordered[int(0.95 * len(ordered)) - 1]
    return (
        f"{name:44} n={len(durations):4}  p50 {statistics.median(durations) * 1000:7.1f} ms  p95 {p95 * 1000:7.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--domains", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    with scratch_database("crawler_bench_api") as database:
        migrate(database)
        create_users(database)
        start = time.perf_counter()
        fill(database, args.pages, args.domains)
        print(f"filled {args.pages:,} pages and {args.domains:,} domains in {time.perf_counter() - start:.1f} s")
        server = ServeProcess(database, Path(tempfile.mkdtemp()) / "serve.log", {"CRAWLER_API_RATE_LIMITS": UNLIMITED})
        try:
            routes = {
                "/api/domains (dashboard: sort=delay, 100)": [f"/api/domains?sort=delay&limit={DASHBOARD_DOMAINS}"],
                "/api/domains (sorts x offsets, 100)": [
                    f"/api/domains?sort={s}&offset={o}"
                    for s in ("domain", "responses_429", "queued", "errors")
                    for o in (0, 5000)
                ],
                "/api/pages (newest 100, 50 pages deep)": deep_page_paths(server, "/api/pages?limit=100", 50),
                "/api/pages?domain (keyset)": deep_page_paths(server, "/api/pages?domain=d42.example&limit=5", 2),
                "/api/pages?status=error": ["/api/pages?status=error&limit=100"],
                "/api/stats": ["/api/stats"],
            }
            # The machine's floor at the moment (shared and noisy): a route that reads no database.
            print(
                summary(
                    "/openapi.json (no database: the floor)", timed_requests(server, ["/openapi.json"], args.requests)
                )
            )
            for label, paths in routes.items():
                print(summary(label, timed_requests(server, paths, args.requests)))
        finally:
            server.stop()
        floor = asyncio.run(round_trip(database, 50))
        print(f"SELECT 1 through the API's pool (the database floor): median {floor * 1000:.1f} ms")
        refreshes = asyncio.run(refresh_database_time(database, 50))
        times = [t for t, _ in refreshes]
        print(
            f"dashboard refresh, database time over {len(times)} refreshes ({refreshes[0][1]} statements): "
            f"median {statistics.median(times) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms"
        )
        recount = asyncio.run(stored_only_recount_time(database, 20))
        share = recount * DASHBOARD_REFRESH_SECONDS / STORED_ONLY_RECOUNT_SECONDS
        print(
            f"  plus the count of domains known only from the domains table, once per {STORED_ONLY_RECOUNT_SECONDS:.0f} s: "
            f"median {recount * 1000:.1f} ms, {share * 1000:.1f} ms a refresh at one every {DASHBOARD_REFRESH_SECONDS:.0f} s"
        )


if __name__ == "__main__":
    main()

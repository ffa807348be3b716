"""Pages/s of one crawl process against two sharing one frontier through Redis, on an
unthrottled many-host local web, measured in the same run.

    .venv/bin/python -m bench.shared_scaling [--hosts 16] [--pages 400] [--runs 3] [--latency-ms 0]

Both configurations run the same command with ``REDIS_URL`` set (one process, then two), the
politeness limits off (no delay, no robots.txt) and rows stored in one fresh PostgreSQL
database per run. Pages/s comes from the test web's own log: pages answered divided by the
time from the first request to the last answer, so process start-up and the idle wait at the
end do not count. Medians over the runs; the ratio is two processes over one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import uuid
from pathlib import Path

import psycopg
import redis

from tests.helpers import forget_crawl, scrapy_command
from tests.testweb import TestWeb

ROOT = Path(__file__).resolve().parents[1]
REDIS_URL = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
POSTGRES_ADMIN_URL = os.environ.get("CRAWLER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


def _crawl(processes: int, seeds: list[str], web: TestWeb, hosts: list[str]) -> tuple[int, float]:
    web.clear()
    crawl, database = f"scaling-{uuid.uuid4().hex[:8]}", f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    settings = {
        "REDIS_URL": REDIS_URL,
        "CRAWLER_CRAWL_ID": crawl,
        "CRAWLER_IDLE_CLOSE_SECONDS": "1",
        "CRAWLER_LIMITER_ENABLED": "False",
        "ROBOTSTXT_OBEY": "False",
        "CONCURRENT_REQUESTS": "16",
        "DATABASE_URL": POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{database}",
        "LOG_LEVEL": "WARNING",
    }
    command = scrapy_command("crawl", "links", "-a", f"url={','.join(seeds)}", "-a", "max_depth=100", settings=settings)
    try:
        workers = [
            subprocess.Popen(command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}) for _ in range(processes)
        ]
        for worker in workers:
            if worker.wait() != 0:
                raise SystemExit(f"a crawl process failed with exit code {worker.returncode}")
    finally:
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        forget_crawl(redis.Redis.from_url(REDIS_URL), crawl)
    log = [entry for host in hosts for entry in web.log(host) if entry.status == 200]
    return len(log), max(e.end for e in log) - min(e.start for e in log)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--pages", type=int, default=400, help="pages per host")
    parser.add_argument("--links", type=int, default=60, help="links per page")
    parser.add_argument("--latency-ms", type=int, default=0, help="time each answer takes")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    spec = f"heavy:pages={args.pages},links={args.links}" + (
        f",latency_ms={args.latency_ms}" if args.latency_ms else ""
    )
    hosts = [f"host-{n}" for n in range(args.hosts)]
    rates: dict[int, list[float]] = {1: [], 2: []}
    with TestWeb({host: spec for host in hosts}) as web:
        seeds = [web.url(host) for host in hosts]
        for run in range(args.runs):
            for processes in (1, 2):
                pages, seconds = _crawl(processes, seeds, web, hosts)
                rates[processes].append(pages / seconds)
                print(
                    f"run {run + 1}: {processes} process{'es' if processes > 1 else ''}: {pages} pages in {seconds:.1f} s, "
                    f"{rates[processes][-1]:.1f} pages/s",
                    flush=True,
                )
    one, two = statistics.median(rates[1]), statistics.median(rates[2])
    print(
        f"\n{args.hosts} hosts x {args.pages} pages, {args.links} links a page, {args.latency_ms} ms answers; medians of {args.runs} runs"
    )
    print(f"one process {one:.1f} pages/s, two processes {two:.1f} pages/s: {two / one:.2f}x")


if __name__ == "__main__":
    main()

"""``scrapy prune`` on PostgreSQL with 1 million robots decisions and 100,000 pages.

    .venv/bin/python -m bench.prune_speed [--decisions 1000000] [--pages 100000] [--runs 3]
        [--postgres postgresql://postgres@127.0.0.1:5432/postgres]

Each run fills a fresh database (COPY) with what earlier versions wrote: a decision per
request, most of them allowed, over 90 days; pages of which 5 % answered 404/410 on three
visits in a row and 40 % are older than 60 days. Then it times ``scrapy prune`` as cron runs it
(a process of its own, with ``CRAWLER_RETAIN_BODIES_DAYS=60`` and the other defaults) and checks
that exactly what the settings keep is left. Stock Scrapy stores nothing of the kind, so there
is no stock figure to compare with: the bound is the acceptance one, under 60 s.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta

import psycopg

from crawler.storage.schema import MIGRATIONS, migration_statements
from tests.helpers import ROOT, crawl_environment, scrapy_command

DAY = timedelta(days=1)


def _create(admin_url: str) -> str:
    name = f"bench_prune_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    return admin_url.rsplit("/", 1)[0] + f"/{name}"


def _drop(admin_url: str, url: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {url.rsplit('/', 1)[1]} WITH (FORCE)")


def _fill(url: str, decisions: int, pages: int, now: datetime) -> dict[str, int]:
    """Fill the database; return the rows the default settings keep."""
    expected = {"robots_decisions": 0, "pages": 0, "bodies": 0}
    with psycopg.connect(url) as connection:
        connection.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        for version in range(1, len(MIGRATIONS) + 1):
            for statement in migration_statements(version, "postgresql"):
                connection.execute(statement)
            connection.execute("INSERT INTO schema_version VALUES (%s)", (version,))
        with connection.cursor().copy(
            "COPY robots_decisions (url, domain, user_agent, allowed, matched_rule, decided_at, job_id) FROM STDIN"
        ) as copy:
            for n in range(decisions):
                allowed = n % 5 != 0
                age = (n * 7919) % 90  # days, spread over 90
                if not allowed and age < 30:
                    expected["robots_decisions"] += 1
                rule = "no rule matched" if allowed else "Disallow: /private"
                copy.write_row(
                    (
                        f"https://site{n % 500}.example/p/{n}",
                        f"site{n % 500}.example",
                        "crawler",
                        allowed,
                        rule,
                        now - age * DAY,
                        "bench",
                    )
                )
        body = b"<html>" + b"x" * 1000 + b"</html>"
        with connection.cursor().copy(
            "COPY pages (url, url_hash, surt_key, domain, status, http_status, body, text, crawled_at, discovered_at, error_count) FROM STDIN"
        ) as copy:
            for n in range(pages):
                gone = n % 20 == 0
                age = (n * 104729) % 100
                if not gone:
                    expected["pages"] += 1
                    expected["bodies"] += age <= 60
                copy.write_row(
                    (
                        f"https://site{n % 500}.example/p/{n}",
                        uuid.uuid5(uuid.NAMESPACE_URL, str(n)).hex * 2,
                        f"example,site{n % 500})/p/{n}",
                        f"site{n % 500}.example",
                        "error" if gone else "fetched",
                        404 if gone else 200,
                        body,
                        "text",
                        now - age * DAY,
                        now - 200 * DAY,
                        3 if gone else 0,
                    )
                )
        connection.execute("ANALYZE")
    return expected


def _left(url: str) -> dict[str, int]:
    with psycopg.connect(url) as connection:
        ((decisions,),) = connection.execute("SELECT COUNT(*) FROM robots_decisions").fetchall()
        ((pages, bodies),) = connection.execute("SELECT COUNT(*), COUNT(body) FROM pages").fetchall()
    return {"robots_decisions": decisions, "pages": pages, "bodies": bodies}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", type=int, default=1_000_000)
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    times = []
    for run in range(args.runs):
        url = _create(args.postgres)
        try:
            started = time.monotonic()
            expected = _fill(url, args.decisions, args.pages, datetime.now(UTC))
            filled = time.monotonic() - started
            command = scrapy_command("prune", settings={"DATABASE_URL": url, "CRAWLER_RETAIN_BODIES_DAYS": 60})
            started = time.monotonic()
            result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=crawl_environment())
            elapsed = time.monotonic() - started
            if result.returncode:
                sys.exit(f"prune failed: {result.stderr[-2000:]}")
            left = _left(url)
            ok = left == expected
            times.append(elapsed)
            print(
                f"run {run + 1}: filled in {filled:.1f} s; prune took {elapsed:.1f} s; left {left}; expected {expected}: {'exact' if ok else 'WRONG'}"
            )
            print("  " + result.stdout.strip().replace("\n", "\n  "))
            if not ok:
                sys.exit(1)
        finally:
            _drop(args.postgres, url)
    median = statistics.median(times)
    print(
        f"median prune time: {median:.1f} s for {args.decisions} decisions and {args.pages} pages "
        f"({'under' if median < 60 else 'OVER'} the 60 s bound; ratio to the bound {median / 60:.2f})"
    )


if __name__ == "__main__":
    main()

"""A shared crawl through outages at full scale: Redis a black hole (connections open, no
answer at all) for 30 s, and PostgreSQL stopped for 5 minutes with 120 s leases. The test
suite runs both scaled down (``tests/test_redis_outages.py``).

    .venv/bin/python -m bench.shared_outages [--silence 30] [--outage 300] [--lease 120]

Printed: for the Redis outage, the reactor heartbeats logged while Redis was silent (one a
second is due) and their largest lag, whether the worker paused and resumed, and rows against
pages; for the PostgreSQL outage, pages fetched more than once (none allowed) and rows
against pages. No stock Scrapy run: stock scrapy-redis has neither leases nor an outage mode
to compare with (its blocking ``BRPOP`` on the reactor freezes the process instead).
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path

import redis

from tests.helpers import Database, forget_crawl
from tests.outage_runs import postgres_stopped, redis_blackholed
from tests.testweb import TestWeb

REDIS_ADDRESS = ("127.0.0.1", 6379)
SITE = "paced:crawl_delay=0.05,pages=300"
PAGES = {"/", "/private/page"} | {f"/p/{n}" for n in range(300)}


def _silent_redis(web: TestWeb, silence: float, root: Path) -> None:
    crawl = f"outage-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    try:
        run = redis_blackholed(
            web,
            Database(f"sqlite:///{root / 'redis.db'}"),
            REDIS_ADDRESS,
            crawl,
            root,
            site="site",
            silence=silence,
            settings={"CRAWLER_LEASE_SECONDS": "10"},
        )
    finally:
        forget_crawl(redis.Redis(*REDIS_ADDRESS), crawl)
    (log,) = run.logs
    beats = run.heartbeats_during_outage()
    print(
        f"Redis silent {silence:.0f} s: {len(beats)} heartbeats logged in the {int(silence) - 1} whole seconds "
        f"(largest lag {max((lag for _, lag in beats), default=float('nan')):.3f} s); paused: "
        f"{'Redis unavailable' in log}, resumed: {'Redis available again' in log}; "
        f"{len(run.rows)} rows for {len(PAGES)} pages ({len(run.rows.keys() & PAGES)} matching); "
        f"{len(run.fetched_twice)} pages fetched twice; {time.monotonic() - started:.0f} s in all",
        flush=True,
    )


def _stopped_postgres(web: TestWeb, outage: float, lease: float, root: Path) -> None:
    crawl = f"outage-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    try:
        run = postgres_stopped(
            web,
            crawl,
            root,
            site="site",
            workers=2,
            outage=outage,
            settings={"REDIS_URL": "redis://{}:{}/0".format(*REDIS_ADDRESS), "CRAWLER_LEASE_SECONDS": str(lease)},
        )
    finally:
        forget_crawl(redis.Redis(*REDIS_ADDRESS), crawl)
    print(
        f"PostgreSQL stopped {outage:.0f} s, leases {lease:.0f} s, 2 workers: "
        f"{len(run.fetched_twice)} pages fetched twice {run.fetched_twice[:5]}; "
        f"{len(run.rows)} rows for {len(PAGES)} pages ({len(run.rows.keys() & PAGES)} matching); "
        f"back in the logs: {sum('Database available again' in log for log in run.logs)} of 2; "
        f"{time.monotonic() - started:.0f} s in all",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--silence", type=float, default=30.0, help="seconds Redis answers nothing")
    parser.add_argument("--outage", type=float, default=300.0, help="seconds PostgreSQL is stopped")
    parser.add_argument("--lease", type=float, default=120.0, help="CRAWLER_LEASE_SECONDS of the PostgreSQL run")
    args = parser.parse_args()
    with TestWeb({"site": SITE}) as web, tempfile.TemporaryDirectory(prefix="crawler-outages-") as tmp:
        root = Path(tmp)
        (root / "redis").mkdir()
        (root / "postgres").mkdir()
        _silent_redis(web, args.silence, root / "redis")
        _stopped_postgres(web, args.outage, args.lease, root / "postgres")


if __name__ == "__main__":
    main()

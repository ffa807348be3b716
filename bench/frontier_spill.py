"""Redis memory of a shared frontier whose domains are cold, with the spill to PostgreSQL off and
on, measured in the same run.

    .venv/bin/python -m bench.frontier_spill [--count 100000] [--sites 20] [--runs 3]

A Redis server of its own (started here, stopped by its PID) and a scratch PostgreSQL database.
Each run queues the same ``count`` link requests (``frontier_memory``'s realistic URLs, over
``sites`` sites; the seen filter left out: it is not moved) into an empty Redis, blocks every
site for an hour (as a 429 does), and measures Redis's ``used_memory`` after minus before: with
the spill off as queued; with it on once the movers (``CRAWLER_SPILL_ABOVE`` 500, ``KEEP`` 200
as by default) have nothing left to move. Prints both, their ratio, how fast the tails moved to
the table, and the table's size on disk; then what the spill costs a push: the time to queue
the requests over 1,000 sites (none long) with the spill on over the time with it off.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import redis
from scrapy.utils.test import get_crawler

from bench.api_common import scratch_database
from bench.frontier_memory import link_requests, used_memory
from crawler.frontier.codec import RequestCodec
from crawler.frontier.queue_redis import QueueEntry
from crawler.frontier.spill import SpillMover
from crawler.redis.link import RedisLink
from crawler.redis.scripts import with_scripts
from crawler.redis.store import FrontierConfig, FrontierStore
from crawler.settings import (
    CRAWLER_REDIS_LOCAL_META_KEYS,
    CRAWLER_REDIS_META_KEYS,
    CRAWLER_SPILL_ABOVE,
    CRAWLER_SPILL_KEEP,
)
from crawler.storage import open_backend
from crawler.storage.backend import StorageBackend
from tests.helpers import PageSpider
from tests.throwaway_redis import ThrowawayRedis

PREFIX = "crawler:{bench}"
SHORT_SITES = 1_000


def store(client: redis.Redis, spill: bool) -> FrontierStore:
    config = FrontierConfig(
        robots=False,
        spill_above=CRAWLER_SPILL_ABOVE if spill else 0,
        spill_keep=CRAWLER_SPILL_KEEP if spill else 0,
    )
    return FrontierStore(client, PREFIX, config)


def queue(frontier: FrontierStore, entries: list[QueueEntry]) -> None:
    """Queue ``entries``, a thousand to a round trip."""
    client = frontier.client
    for start in range(0, len(entries), 1_000):

        def push(batch: list[QueueEntry] = entries[start : start + 1_000]) -> None:
            with client.pipeline(transaction=False) as pipe:
                for entry in batch:
                    frontier.call(*entry.arguments(frontier), client=pipe)
                pipe.execute()

        with_scripts(client, push)


def block(frontier: FrontierStore, entries: list[QueueEntry]) -> None:
    """Block every site of ``entries`` for an hour, as a 429 does."""
    blocked_until = frontier.now() + 3600
    for domain in {entry.domain for entry in entries}:
        frontier.update(domain, {"hold": repr(blocked_until)})


async def spill_all(mover: SpillMover, backend: StorageBackend) -> int:
    moved = 0
    while (turn := await mover.turn(backend))[0]:
        moved += turn[0]
    return moved


def measure(client: redis.Redis, entries: list[QueueEntry], backend: StorageBackend | None) -> tuple[int, float]:
    """Bytes of Redis the queued entries take (spilled when ``backend`` is given), and seconds
    the spill took."""
    client.flushall()
    before = used_memory(client)
    frontier = store(client, spill=backend is not None)
    queue(frontier, entries)
    block(frontier, entries)
    took = 0.0
    if backend is not None:
        started = time.monotonic()
        asyncio.get_event_loop().run_until_complete(
            spill_all(SpillMover(frontier, RedisLink(client), "bench"), backend)
        )
        took = time.monotonic() - started
        sizes = frontier.sizes()
        assert sizes.queued + sizes.spilled == len(entries), sizes
    return used_memory(client) - before, took


def push_seconds(client: redis.Redis, entries: list[QueueEntry], spill: bool) -> float:
    """Seconds to queue ``entries`` into an empty Redis."""
    client.flushall()
    started = time.monotonic()
    queue(store(client, spill), entries)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--sites", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    crawler = get_crawler(PageSpider)
    spider = PageSpider()
    spider.crawler = crawler
    codec = RequestCodec(spider, CRAWLER_REDIS_META_KEYS, CRAWLER_REDIS_LOCAL_META_KEYS)
    entries = [QueueEntry.of(request, codec) for request in link_requests(spider, args.count, sites=args.sites)]
    # The push's own cost: with the spill on, a push counts its domain's queue until it is long.
    short = [QueueEntry.of(request, codec) for request in link_requests(spider, args.count, sites=SHORT_SITES)]
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    with tempfile.TemporaryDirectory() as tmp, scratch_database("bench_spill") as database:
        server = ThrowawayRedis(Path(tmp) / "redis", persistent=False)
        server.start()
        backend = open_backend(database.url)
        loop.run_until_complete(backend.open())
        try:
            client = redis.Redis.from_url(server.url)
            off, on, rates, pushes = [], [], [], []
            for run in range(args.runs):
                pushes.append(push_seconds(client, short, True) / push_seconds(client, short, False))
                off.append(measure(client, entries, None)[0])
                loop.run_until_complete(backend.execute("TRUNCATE frontier_spill"))
                memory, took = measure(client, entries, backend)
                on.append(memory)
                moved = database.query("SELECT COUNT(*) FROM frontier_spill")[0][0]
                rates.append(moved / took)
                print(
                    f"run {run + 1}: spill off {off[-1] / 2**20:.1f} MiB, on {on[-1] / 2**20:.2f} MiB "
                    f"({moved:,} requests moved to PostgreSQL in {took:.1f} s)"
                )
            table = database.query("SELECT pg_total_relation_size('frontier_spill')")[0][0]
            off_median, on_median = statistics.median(off), statistics.median(on)
            print(
                f"\n{args.count:,} requests queued over {args.sites} blocked sites, medians of {args.runs} runs: "
                f"Redis {off_median / 2**20:.1f} MiB with the spill off, {on_median / 2**20:.2f} MiB on "
                f"({off_median / on_median:.0f}x less: {args.sites} sites x {CRAWLER_SPILL_KEEP} requests kept in Redis, "
                f"{off_median / args.count:.0f} bytes per queued request with the spill off); moved at "
                f"{statistics.median(rates):,.0f} requests/s; the table takes {table / 2**20:.1f} MiB on disk "
                f"({table / moved:.0f} bytes per row, indexes included). Queuing {args.count:,} requests over "
                f"{SHORT_SITES:,} sites (none long) takes {statistics.median(pushes):.2f}x the time with the spill on"
            )
        finally:
            loop.run_until_complete(backend.close())
            server.stop()


if __name__ == "__main__":
    main()

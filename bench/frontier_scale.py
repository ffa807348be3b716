"""The shared frontier at scale: 10 million queued requests over 100,000 domains in one Redis.

    .venv/bin/python -m bench.frontier_scale [--requests 10000000] [--domains 100000] [--seen exact|bloom]

A Redis server of its own (started here, stopped by its PID). Link requests as the links spider
makes them (realistic URLs, referrer, depth) are pushed through the frontier script in
pipelines, each marked in the seen filter in the same step, a tenth at a time. After each tenth
it prints Redis memory per queued request and the push rate, then hands out ``--sample``
requests (each acknowledged, as a crawl does) and prints the time per request handed out, so
the figures show whether handing out work grows with the size of the frontier. The figures
are those of ``docs/scale.md``.

    .venv/bin/python -m bench.frontier_scale --zipf 1 --cold 0.5 --spill 2 --seen bloom [--reopen 200]

The same with the spill to PostgreSQL (a scratch database, created and dropped here): the n-th
domain gets 1/n^ZIPF of the URLs, so the first hundreds queue far more than
``CRAWLER_SPILL_ABOVE``; ``--cold`` of the domains, drawn whatever their rank, are blocked for
the run (a 429, an open circuit), so their long queues are cold; ``--spill`` mover processes take
their turns as every worker does (``crawler.frontier.spill``, every ``CRAWLER_SPILL_SECONDS``)
while the pushes go on. Each tenth's line adds the requests in Redis and in the table; at the
end, the movers' rates, Redis memory, the table's bytes a row, then ``--reopen`` blocked domains
(of at most ``REOPENED_ROWS_AT_MOST`` rows) reopen while every other domain is held, and are
emptied by pops as fast as they go: whether every row comes back, once, and how fast.
``--delay 1`` gives every domain the default delay of a crawl: then the tail of a big site's
queue, beyond the requests kept, is hours from its turn and spills too, blocked or not (use
``--reopen 0``: emptied at one request a second, the reopened domains would take hours).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import redis
from scrapy import Request
from scrapy.utils.test import get_crawler

from bench.api_common import scratch_database
from bench.cold_frontier import BLOCK_SECONDS, Movers, ZipfSites, cold_sites, domain_of, drain, hold, queued_in_redis
from bench.frontier_memory import link_requests, used_memory
from crawler.frontier.codec import RequestCodec
from crawler.frontier.queue_redis import QueueEntry
from crawler.politeness.slots import domain_key
from crawler.redis.scripts import load_scripts
from crawler.redis.store import FrontierConfig, FrontierStore
from crawler.seen.bloom import BloomSeenFilter
from crawler.seen.bloom_shape import BloomShape
from crawler.seen.exact import ExactSeenFilter
from crawler.settings import (
    CRAWLER_REDIS_LOCAL_META_KEYS,
    CRAWLER_REDIS_META_KEYS,
    CRAWLER_SPILL_ABOVE,
    CRAWLER_SPILL_COLD_SECONDS,
    CRAWLER_SPILL_KEEP,
)
from crawler.storage import open_backend
from tests.helpers import Database, PageSpider
from tests.throwaway_redis import ThrowawayRedis

PIPELINE = 1_000
PREFIX = "crawler:{scale}"
REOPENED_ROWS_AT_MOST = 10 * CRAWLER_SPILL_ABOVE
"""The reopened domains are among those with at most this many rows: a bigger one comes back
a refill (at most ``CRAWLER_SPILL_KEEP``) per mover turn, for longer than a run should last."""


def push_tenth(frontier: FrontierStore, codec: RequestCodec, seen, requests: Iterator[Request]) -> int:
    pushed, pipe = 0, frontier.client.pipeline(transaction=False)
    for request in requests:
        entry = QueueEntry.of(request, codec, seen.marker(request))
        frontier.call(*entry.arguments(frontier), client=pipe)
        pushed += 1
        if pushed % PIPELINE == 0:
            pipe.execute()
    pipe.execute()
    return pushed


def hand_out(frontier: FrontierStore, sample: int) -> list[float]:
    """Seconds per request handed out and acknowledged, for ``sample`` requests."""
    times = []
    for _ in range(sample):
        started = time.perf_counter()
        batch = frontier.pop_many(1)
        if not batch.popped:
            break
        popped = batch.popped[0]
        key = popped.request.partition("\t")[0]
        frontier.finish(popped.domain, key)
        frontier.ack([key], popped.domain)
        times.append(time.perf_counter() - started)
    return times


def seen_filter(kind: str, client: redis.Redis, frontier: FrontierStore, crawler, capacity: int):
    def place(request: Request) -> str:
        return frontier.seen_key(domain_key(request))

    if kind == "bloom":
        # Each shard a filter of its share of the capacity, as a crawl's (``CrawlServices.seen``).
        shape = BloomShape.for_capacity(max(1, capacity // len(frontier.shards)), 1e-6)
        places = [f"{shard}:seen" for shard in frontier.shards]
        return BloomSeenFilter(
            client,
            frontier.key("seen"),
            crawler.request_fingerprinter,
            shape,
            use_module=False,
            place=place,
            places=places,
        )
    return ExactSeenFilter(client, frontier.key("seen"), crawler.request_fingerprinter, place=place)


def frontier_config(spill: bool, delay: float = 0.0) -> FrontierConfig:
    # No concurrency cap, and by default no delay: every domain not blocked is ready, so each
    # sample pop finds work. With a delay, the queue of a big site is mostly far from its turn.
    return FrontierConfig(
        default_delay=delay,
        default_concurrency=10**9,
        robots=False,
        spill_above=CRAWLER_SPILL_ABOVE if spill else 0,
        spill_keep=CRAWLER_SPILL_KEEP if spill else 0,
        spill_cold_seconds=CRAWLER_SPILL_COLD_SECONDS,
    )


def create_schema(database_url: str) -> None:
    async def opened_and_closed() -> None:
        backend = open_backend(database_url)
        await backend.open()
        await backend.close()

    asyncio.run(opened_and_closed())


def reopen(frontier: FrontierStore, database: Database, movers: Movers, domains: int, count: int) -> None:
    """Reopen ``count`` spilled domains (every other one held), hand out all their requests and
    print how their rows came back."""
    chosen = [
        domain
        for (domain,) in database.query(
            "SELECT domain FROM frontier_spill GROUP BY domain HAVING COUNT(*) <= ? ORDER BY md5(domain) LIMIT ?",
            (REOPENED_ROWS_AT_MOST, count),
        )
    ]
    held = hold(frontier, (domain_of(site) for site in range(domains)), BLOCK_SECONDS)
    for domain in chosen:
        frontier.update(domain, {"hold": "0"})

    def rows_left() -> int:
        return database.query("SELECT COUNT(*) FROM frontier_spill WHERE domain = ANY(?)", (chosen,))[0][0]

    rows, queued = rows_left(), queued_in_redis(frontier, chosen)
    print(
        f"reopened {len(chosen)} blocked domains (every other of the {held:,} held): {queued:,} requests "
        f"in Redis, {rows:,} in the table",
        flush=True,
    )
    moved = movers.moved()
    drained = drain(frontier, rows_left)
    print(
        f"  handed out {drained.handed_out:,} of {queued + rows:,} in {drained.seconds:.0f} s "
        f"({drained.repeated} twice): rows brought back at {(rows - drained.left_in_table) / drained.seconds:,.0f}/s "
        f"by {len(movers.processes)} mover(s); {drained.left_in_table:,} rows left in the table; meanwhile the "
        f"movers spilled {movers.moved() - moved:,} requests of the domains held, cold now"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=10_000_000)
    parser.add_argument("--domains", type=int, default=100_000)
    parser.add_argument("--sample", type=int, default=2_000)
    parser.add_argument("--seen", choices=("exact", "bloom"), default="exact")
    parser.add_argument(
        "--zipf", type=float, default=0.0, help="the n-th domain gets 1/n^ZIPF of the URLs (0: in turn)"
    )
    parser.add_argument("--cold", type=float, default=0.0, help="share of the domains blocked for the run")
    parser.add_argument("--spill", type=int, default=0, help="mover processes of the spill to PostgreSQL (0: off)")
    parser.add_argument("--reopen", type=int, default=200, help="blocked domains reopened and emptied at the end")
    parser.add_argument(
        "--delay", type=float, default=0.0, help="every domain's delay (with --spill: big sites' tails are cold)"
    )
    options = parser.parse_args()
    crawler = get_crawler(PageSpider)
    spider = PageSpider()
    codec = RequestCodec(spider, CRAWLER_REDIS_META_KEYS, CRAWLER_REDIS_LOCAL_META_KEYS)
    site_of = ZipfSites(options.domains, options.zipf) if options.zipf else None
    with tempfile.TemporaryDirectory() as folder, ExitStack() as stack:
        server = ThrowawayRedis(Path(folder) / "redis", persistent=False)
        server.start()
        stack.callback(server.stop)
        client = redis.Redis.from_url(server.url)
        stack.callback(client.close)
        frontier = FrontierStore(client, PREFIX, frontier_config(bool(options.spill), options.delay))
        seen = seen_filter(options.seen, client, frontier, crawler, options.requests)
        load_scripts(client)  # the pipelines below send scripts by digest only
        before = used_memory(client)
        blocked_domains = [domain_of(site) for site in cold_sites(options.domains, options.cold)]
        blocked = hold(frontier, blocked_domains, BLOCK_SECONDS)
        movers = database = None
        if options.spill:
            database = stack.enter_context(scratch_database("bench_scale"))
            create_schema(database.url)
            movers = stack.enter_context(
                Movers(options.spill, server.url, database.url, PREFIX, frontier_config(True, options.delay))
            )
        tenth = options.requests // 10
        queued, medians = 0, []
        spread = f"1/n^{options.zipf:g}" if site_of else "in turn"
        print(
            f"{options.requests:,} requests over {options.domains:,} domains ({spread}, {blocked:,} blocked), "
            f"seen filter {options.seen}, {options.spill} spill mover(s)"
        )
        began = time.perf_counter()
        for step in range(10):
            started = time.perf_counter()
            requests = link_requests(spider, tenth, step * tenth, options.domains, site_of)
            queued += push_tenth(frontier, codec, seen, requests)
            rate = tenth / (time.perf_counter() - started)
            memory = used_memory(client) - before
            times = hand_out(frontier, options.sample)
            queued -= len(times)
            medians.append(statistics.median(times))
            p99 = statistics.quantiles(times, n=100)[98]
            line = (
                f"  {queued:>11,} queued: {memory / queued:6.1f} B/request, {memory / 2**20:8,.0f} MiB, "
                f"pushed {rate:7,.0f}/s; hand-out + ack median {medians[-1] * 1e6:6.0f} µs, p99 {p99 * 1e6:6.0f} µs"
            )
            if movers is not None:
                sizes = frontier.sizes()
                moved = movers.moved()
                line += (
                    f"; in Redis {sizes.queued:,}, spilled {sizes.spilled:,}, "
                    f"moved {moved / (time.perf_counter() - began):,.0f}/s"
                )
            print(line, flush=True)
        print(f"hand-out median at the last tenth / at the first: {medians[-1] / medians[0]:.2f}")
        if movers is not None and database is not None:
            pushed = time.perf_counter() - began
            settled = movers.settle()
            sizes = frontier.sizes()
            memory = used_memory(client) - before
            rows, table = database.query(
                "SELECT COUNT(*), pg_total_relation_size('frontier_spill') FROM frontier_spill"
            )[0]
            totals = movers.totals
            print(
                f"pushed in {pushed:,.0f} s; the movers had moved {movers.moved():,} requests {settled:.0f} s later "
                f"({movers.moved() / (pushed + settled):,.0f}/s over the run; {movers.moved() / totals.busy.value:,.0f}/s "
                f"a mover while in a turn, each busy {totals.busy.value / len(movers.processes) / (pushed + settled):.0%} of the time, "
                f"{totals.turns.value:,} turns)\n"
                f"at the end: Redis used_memory {memory / 2**20:,.0f} MiB over the start for {sizes.queued:,} requests "
                f"queued in Redis ({memory / sizes.queued:.0f} B each, seen filter and domain state included); "
                f"{queued_in_redis(frontier, blocked_domains):,} of them of blocked domains; "
                f"{sizes.spilled:,} spilled by Redis's count, {rows:,} rows in the table, "
                f"{table / 2**20:,.0f} MiB on disk ({table / max(rows, 1):.0f} B a row, indexes included)",
                flush=True,
            )
            if options.reopen:
                reopen(frontier, database, movers, options.domains, options.reopen)


if __name__ == "__main__":
    main()

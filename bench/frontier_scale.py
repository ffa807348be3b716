"""The shared frontier at scale: 10 million queued requests over 100,000 domains in one Redis.

    .venv/bin/python -m bench.frontier_scale [--requests 10000000] [--domains 100000] [--seen exact|bloom]

A Redis server of its own (started here, stopped by its PID). Link requests as the links spider
makes them (realistic URLs, referrer, depth) are pushed through the frontier script in
pipelines, each marked in the seen filter in the same step, a tenth at a time. After each tenth
it prints Redis memory per queued request and the push rate, then hands out ``--sample``
requests (each acknowledged, as a crawl does) and prints the time per request handed out, so
the figures show whether handing out work grows with the size of the frontier. The figures
are those of ``docs/scale.md``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import redis
from scrapy import Request
from scrapy.utils.test import get_crawler

from bench.frontier_memory import link_requests
from crawler.frontier.codec import RequestCodec
from crawler.frontier.queue_redis import QueueEntry
from crawler.politeness.slots import domain_key
from crawler.redis.store import FrontierConfig, FrontierStore
from crawler.seen.bloom import BloomSeenFilter
from crawler.seen.bloom_shape import BloomShape
from crawler.seen.exact import ExactSeenFilter
from crawler.settings import CRAWLER_REDIS_LOCAL_META_KEYS, CRAWLER_REDIS_META_KEYS
from tests.helpers import PageSpider
from tests.throwaway_redis import ThrowawayRedis

PIPELINE = 1_000


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=10_000_000)
    parser.add_argument("--domains", type=int, default=100_000)
    parser.add_argument("--sample", type=int, default=2_000)
    parser.add_argument("--seen", choices=("exact", "bloom"), default="exact")
    options = parser.parse_args()
    crawler = get_crawler(PageSpider)
    spider = PageSpider()
    codec = RequestCodec(spider, CRAWLER_REDIS_META_KEYS, CRAWLER_REDIS_LOCAL_META_KEYS)
    with tempfile.TemporaryDirectory() as folder:
        server = ThrowawayRedis(Path(folder) / "redis", persistent=False)
        server.start()
        try:
            client = redis.Redis.from_url(server.url)
            config = FrontierConfig(default_delay=0.0, default_concurrency=10**9, robots=False)
            frontier = FrontierStore(client, "crawler:{scale}", config)

            def place(request: Request) -> str:
                return frontier.seen_key(domain_key(request))

            if options.seen == "bloom":
                shape = BloomShape.for_capacity(options.requests, 1e-6)
                seen = BloomSeenFilter(
                    client, frontier.key("seen"), crawler.request_fingerprinter, shape, use_module=False, place=place
                )
            else:
                seen = ExactSeenFilter(client, frontier.key("seen"), crawler.request_fingerprinter, place=place)
            before = int(client.info("memory")["used_memory"])
            tenth = options.requests // 10
            queued, medians = 0, []
            print(f"{options.requests:,} requests over {options.domains:,} domains, seen filter {options.seen}")
            for step in range(10):
                started = time.perf_counter()
                queued += push_tenth(frontier, codec, seen, link_requests(spider, tenth, step * tenth, options.domains))
                rate = tenth / (time.perf_counter() - started)
                memory = int(client.info("memory")["used_memory"]) - before
                times = hand_out(frontier, options.sample)
                queued -= len(times)
                medians.append(statistics.median(times))
                p99 = statistics.quantiles(times, n=100)[98]
                print(
                    f"  {queued:>11,} queued: {memory / queued:6.1f} B/request, {memory / 2**20:8,.0f} MiB, "
                    f"pushed {rate:7,.0f}/s; hand-out + ack median {medians[-1] * 1e6:6.0f} µs, p99 {p99 * 1e6:6.0f} µs",
                    flush=True,
                )
            print(f"hand-out median at the last tenth / at the first: {medians[-1] / medians[0]:.2f}")
            client.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main()

"""One crawl's frontier on a Redis Cluster against a single Redis, measured in the same run:
keys and memory per master, and pushes a second.

    .venv/bin/python -m bench.frontier_cluster [--count 200000] [--sites 1000] [--shards 16]

Both servers are started here (a cluster of three masters and three replicas on loopback, as
the tests start it, and one plain ``redis-server``), each in a directory of its own, and
stopped by their PIDs. The same link requests (``bench.frontier_memory``: realistic URLs on
``--sites`` sites) are queued through the shared frontier, each marked in the exact seen filter
of its domain's shard in the same step, in pipelines of 1,000 (as a worker's link sends them).
Memory is each master's ``used_memory`` after, minus before. Then ``--sample`` requests are
handed out one at a time (a pop from the shards in turn, its slot finished and its lease
acknowledged: three script calls, synchronous), timed.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import redis
from redis.cluster import RedisCluster as ClusterClient
from scrapy.utils.test import get_crawler

from bench.frontier_memory import link_requests
from crawler.frontier.codec import RequestCodec
from crawler.frontier.queue_redis import QueueEntry
from crawler.politeness.slots import domain_key
from crawler.redis.shards import shard_pattern
from crawler.redis.store import FrontierConfig, FrontierStore
from crawler.seen.exact import ExactSeenFilter
from crawler.settings import CRAWLER_REDIS_LOCAL_META_KEYS, CRAWLER_REDIS_META_KEYS
from tests.helpers import PageSpider
from tests.redis_cluster import RedisCluster
from tests.throwaway_redis import ThrowawayRedis

PREFIX = "crawler:{bench}"
PIPELINE = 1_000


def push_all(client: Any, count: int, sites: int, shards: int) -> float:
    """Queue ``count`` requests through the frontier on ``client``; seconds taken."""
    crawler = get_crawler(PageSpider)
    spider = PageSpider.from_crawler(crawler)
    frontier = FrontierStore(
        client, PREFIX, FrontierConfig(default_delay=0.0, default_concurrency=10**9, robots=False), shards=shards
    )
    codec = RequestCodec(spider, CRAWLER_REDIS_META_KEYS, CRAWLER_REDIS_LOCAL_META_KEYS)
    seen = ExactSeenFilter(
        client, frontier.key("seen"), crawler.request_fingerprinter, place=lambda r: frontier.seen_key(domain_key(r))
    )
    frontier.sizes()  # the script loaded on every master
    started = time.perf_counter()
    pipe = client.pipeline(transaction=False)
    for n, request in enumerate(link_requests(spider, count, sites=sites), 1):
        frontier.call(*QueueEntry.of(request, codec, seen.marker(request)).arguments(frontier), client=pipe)
        if n % PIPELINE == 0:
            pipe.execute()
    pipe.execute()
    seconds = time.perf_counter() - started
    queued = frontier.sizes().queued
    if queued != count:
        raise SystemExit(f"{queued} requests queued of {count}")
    return seconds


def hand_out(client: Any, shards: int, sample: int) -> list[float]:
    """Seconds of each of ``sample`` hand-outs (a pop of one request from the shards in turn, as
    workers ask them, and its acknowledgement)."""
    frontier = FrontierStore(
        client, PREFIX, FrontierConfig(default_delay=0.0, default_concurrency=10**9, robots=False), shards=shards
    )
    times = []
    for n in range(sample):
        started = time.perf_counter()
        batch = frontier.pop_many(1, shard=frontier.shards[n % shards])
        for popped in batch.popped:
            key = popped.request.partition("\t")[0]
            frontier.finish(popped.domain, key)
            frontier.ack([key], popped.domain)
        times.append(time.perf_counter() - started)
    return times


def crawl_keys(node: redis.Redis) -> int:
    patterns = (f"{PREFIX}:*", shard_pattern(PREFIX))
    return sum(1 for pattern in patterns for _ in node.scan_iter(match=pattern, count=1000))


def used_memory(node: redis.Redis) -> int:
    return int(node.info("memory")["used_memory"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--sites", type=int, default=1_000)
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--sample", type=int, default=2_000, help="hand-outs timed")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        cluster = RedisCluster(Path(folder) / "cluster").start()
        single = ThrowawayRedis(Path(folder) / "single", persistent=False)
        single.start()
        try:
            masters = cluster.masters()
            before = {master.port: used_memory(master.client()) for master in masters}
            cluster_seconds = push_all(
                ClusterClient.from_url(cluster.url), options.count, options.sites, options.shards
            )
            single_client = redis.Redis.from_url(single.url)
            single_before = used_memory(single_client)
            single_seconds = push_all(single_client, options.count, options.sites, options.shards)
            single_memory = used_memory(single_client) - single_before
            cluster_times = hand_out(ClusterClient.from_url(cluster.url), options.shards, options.sample)
            single_times = hand_out(single_client, options.shards, options.sample)
            print(f"{options.count:,} requests over {options.sites:,} sites, {options.shards} shards")
            total = 0
            for master in masters:
                client = master.client()
                memory = used_memory(client) - before[master.port]
                total += memory
                print(f"  master {master.address}: {crawl_keys(client):,} keys of the crawl, {memory / 2**20:,.1f} MiB")
            print(
                f"cluster: {total / 2**20:,.1f} MiB in all ({total / options.count:,.0f} bytes a request), "
                f"{options.count / cluster_seconds:,.0f} pushes/s; single Redis: {single_memory / 2**20:,.1f} MiB "
                f"({single_memory / options.count:,.0f} bytes a request), {options.count / single_seconds:,.0f} pushes/s; "
                f"cluster/single: memory {total / single_memory:.2f}, pushes/s {single_seconds / cluster_seconds:.2f}"
            )
            print(
                f"hand-out + ack of {options.sample:,}, median / p99: cluster {_ms(cluster_times)}, "
                f"single Redis {_ms(single_times)}; cluster/single medians "
                f"{statistics.median(cluster_times) / statistics.median(single_times):.2f}"
            )
        finally:
            single.stop()
            cluster.stop()


def _ms(times: list[float]) -> str:
    ordered = sorted(times)
    return f"{statistics.median(ordered) * 1e3:.2f} / {ordered[int(len(ordered) * 0.99)] * 1e3:.2f} ms"


if __name__ == "__main__":
    main()

"""Redis memory per queued request, and one million queued URLs popping at a steady rate.

    .venv/bin/python -m bench.frontier_memory [--count 200000] [--million]

Each run uses a Redis server of its own (started here, stopped by its PID), so that nothing
else is counted. The same link requests (realistic URLs on 1,000 sites, with a referrer and
a depth, as the links spider makes them) are queued through:

- this crawler's shared frontier: the request as compact JSON in per-domain lists, marked in
  the compact seen filter in the same step;
- stock scrapy-redis: its default ``PriorityQueue`` (pickled requests in a sorted set) and its
  ``RFPDupeFilter`` (hex fingerprints in a set).

Memory per request is Redis's ``used_memory`` after, minus before, divided by the count.
``--million`` then queues 1,000,000 URLs in this crawler's frontier and pops them all (with
acknowledgements, as a crawl does), printing the pop rate of every tenth.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import redis
from scrapy import Request
from scrapy.utils.test import get_crawler
from scrapy_redis.dupefilter import RFPDupeFilter
from scrapy_redis.queue import PriorityQueue

from crawler.frontier.codec import RequestCodec
from crawler.frontier.priority import request_priority
from crawler.frontier.queue_redis import QueueEntry
from crawler.politeness.slots import domain_key
from crawler.redis.store import FrontierConfig, FrontierStore
from crawler.seen.exact import ExactSeenFilter
from crawler.settings import CRAWLER_REDIS_LOCAL_META_KEYS, CRAWLER_REDIS_META_KEYS
from tests.helpers import PageSpider
from tests.throwaway_redis import ThrowawayRedis

SITES = 1_000


def site_url(site: int) -> str:
    return f"https://www.site{site}.example"


def link_requests(
    spider: PageSpider, count: int, start: int = 0, sites: int = SITES, site_of: Callable[[int], int] | None = None
) -> Iterator[Request]:
    """``count`` link requests, the ``start``-th on, spread over ``sites`` sites: in turn, or
    the n-th on site ``site_of(n)``."""
    for n in range(start, start + count):
        site = site_url(n % sites if site_of is None else site_of(n))
        section = (n // sites) % 40
        url = f"{site}/articles/section-{section}/article-{n}-on-something"
        depth = 2 + n % 4
        yield Request(
            url,
            callback=spider.parse_page,
            errback=spider.page_failed,
            priority=request_priority(url, depth),
            meta={"depth": depth, "discovered_via": "link", "referrer": f"{site}/articles/section-{section}/"},
        )


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def measure(client: redis.Redis, count: int, push: object) -> float:
    client.flushall()
    before = used_memory(client)
    push(count)  # type: ignore[operator]
    return (used_memory(client) - before) / count


def ours(client: redis.Redis, spider: PageSpider, crawler) -> tuple[FrontierStore, object]:
    frontier = FrontierStore(
        client, "crawler:{bench}", FrontierConfig(default_delay=0.0, default_concurrency=10**9, robots=False)
    )
    codec = RequestCodec(spider, CRAWLER_REDIS_META_KEYS, CRAWLER_REDIS_LOCAL_META_KEYS)
    seen = ExactSeenFilter(
        client, frontier.key("seen"), crawler.request_fingerprinter, place=lambda r: frontier.seen_key(domain_key(r))
    )

    def push(count: int) -> None:
        for request in link_requests(spider, count):
            QueueEntry.of(request, codec, seen.marker(request)).push_to(frontier)

    return frontier, push


def stock(client: redis.Redis, spider: PageSpider) -> object:
    queue = PriorityQueue(client, spider, "stock:requests")
    dupefilter = RFPDupeFilter(client, "stock:dupefilter")

    def push(count: int) -> None:
        for request in link_requests(spider, count):
            if not dupefilter.request_seen(request):
                queue.push(request)

    return push


def million(client: redis.Redis, frontier: FrontierStore, push: object, count: int) -> None:
    client.flushall()
    started = time.monotonic()
    push(count)  # type: ignore[operator]
    pushed = time.monotonic() - started
    memory = used_memory(client)
    print(
        f"\n{count:,} URLs queued in {pushed:.0f} s ({count / pushed:,.0f}/s); Redis used_memory {memory / 2**20:,.0f} MiB "
        f"({memory / count:.0f} bytes per URL, with the seen filter)"
    )
    tenth = count // 10
    rates, popped = [], 0
    slice_started = time.monotonic()
    while True:
        answer = frontier.pop()
        if answer.kind != "request":
            break
        key = answer.request.partition("\t")[0]
        frontier.finish(answer.domain, key)
        frontier.ack([key], answer.domain)
        popped += 1
        if popped % tenth == 0:
            now = time.monotonic()
            rates.append(tenth / (now - slice_started))
            print(f"  popped {popped:>9,}: {rates[-1]:,.0f} pops/s over the last {tenth:,}")
            slice_started = now
    print(
        f"popped {popped:,} of {count:,}; pops/s per tenth: median {statistics.median(rates):,.0f}, "
        f"min {min(rates):,.0f}, max {max(rates):,.0f} (min/max {min(rates) / max(rates):.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--million", action="store_true")
    args = parser.parse_args()
    crawler = get_crawler(PageSpider)
    spider = PageSpider()
    with tempfile.TemporaryDirectory() as tmp:
        server = ThrowawayRedis(Path(tmp) / "redis", persistent=False)
        server.start()
        try:
            client = redis.Redis.from_url(server.url)
            frontier, push_ours = ours(client, spider, crawler)
            push_stock = stock(client, spider)
            results: dict[str, list[float]] = {"crawler": [], "stock": []}
            for run in range(args.runs):
                results["crawler"].append(measure(client, args.count, push_ours))
                results["stock"].append(measure(client, args.count, push_stock))
                print(
                    f"run {run + 1}: crawler {results['crawler'][-1]:.1f} bytes per queued request, "
                    f"stock scrapy-redis {results['stock'][-1]:.1f}"
                )
            ours_median, stock_median = (statistics.median(results[k]) for k in ("crawler", "stock"))
            print(
                f"\n{args.count:,} queued requests, medians: crawler {ours_median:.1f} bytes each, "
                f"stock scrapy-redis {stock_median:.1f}: {stock_median / ours_median:.1f}x less memory"
            )
            if args.million:
                million(client, frontier, push_ours, 1_000_000)
        finally:
            server.stop()


if __name__ == "__main__":
    main()

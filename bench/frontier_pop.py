"""The cost of handing out a request as the number of queued domains grows: this crawler's
politeness-aware frontier queue against stock Scrapy's priority queue (which knows no domains).

    .venv/bin/python -m bench.frontier_pop [--domains 100 1000 10000] [--rounds 3] [--runs 3]

Every domain holds ``--rounds`` requests; the queue hands out one request per domain, the
domains' delay (1 s, on a fake clock) passes, and so on until all are out, with a ``len()``
before every pop as Scrapy's engine does. Stock Scrapy's ``ScrapyPriorityQueue`` pops the same
requests in one go. Printed: microseconds per request (median of ``--runs``) and the ratio.

Then the garbage collector's side: ``--queued`` requests of a crawl's kind (depth and referrer in
their meta, a header) sit in stock Scrapy's ``FifoMemoryQueue`` and in this crawler's
``CompactFifoMemoryQueue``, which keeps them as bytes: the objects the collector tracks, the
time of a full collection (median of ``--runs``), and what compaction costs per request pushed
and popped.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable

from scrapy import Request, Spider
from scrapy.pqueues import ScrapyPriorityQueue
from scrapy.squeues import FifoMemoryQueue
from scrapy.utils.test import get_crawler

from crawler.frontier.compact import CompactFifoMemoryQueue
from crawler.frontier.queue_local import PolitePriorityQueue
from crawler.politeness.limiter_local import DomainLimiter
from crawler.politeness.policy import Policy, PolicyConfig
from tests.helpers import FakeClock


def _requests(domains: int, rounds: int) -> list[Request]:
    return [Request(f"http://site{d}.example/page/{r}") for r in range(rounds) for d in range(domains)]


def _ours(domains: int, rounds: int) -> float:
    clock = FakeClock()
    limiter = DomainLimiter(Policy(PolicyConfig(default_delay=1.0)), clock)
    queue = PolitePriorityQueue(get_crawler(Spider), FifoMemoryQueue, "", limiter=limiter)
    for request in _requests(domains, rounds):
        queue.push(request)
    started = time.perf_counter()
    handed_out = 0
    while len(queue):
        request = queue.pop()
        if request is None:
            clock.now += 1.0  # every domain's delay has passed
            continue
        limiter.finish(request.meta["limiter_domain"])
        handed_out += 1
    assert handed_out == domains * rounds
    return time.perf_counter() - started


def _stock(domains: int, rounds: int) -> float:
    queue = ScrapyPriorityQueue(get_crawler(Spider), FifoMemoryQueue, "")
    for request in _requests(domains, rounds):
        queue.push(request)
    started = time.perf_counter()
    handed_out = 0
    while len(queue):
        queue.pop()
        handed_out += 1
    assert handed_out == domains * rounds
    return time.perf_counter() - started


def _median_us(run: Callable[[int, int], float], domains: int, rounds: int, runs: int) -> float:
    return statistics.median(run(domains, rounds) for _ in range(runs)) / (domains * rounds) * 1e6


def _queued(count: int) -> list[Request]:
    return [
        Request(
            f"http://site{n % 1_000}.example/docs/page/{n}",
            headers={"Referer": f"http://site{n % 1_000}.example/"},
            meta={"depth": 3, "referrer": f"http://site{n % 1_000}.example/"},
            priority=-3,
        )
        for n in range(count)
    ]


def _collector(queue_cls: type, count: int, runs: int) -> tuple[int, float, float]:
    """Tracked objects added, full-collection seconds, seconds per request pushed and popped."""
    crawler = get_crawler(Spider)
    crawler.spider = Spider("bench")
    queue = queue_cls.from_crawler(crawler)
    gc.collect()
    before = len(gc.get_objects())
    requests = _queued(count)
    started = time.perf_counter()
    for request in requests:
        queue.push(request)
    del requests, request
    pushed = time.perf_counter() - started
    gc.collect()
    tracked = len(gc.get_objects()) - before
    pauses = []
    for _ in range(runs):
        started = time.perf_counter()
        gc.collect()
        pauses.append(time.perf_counter() - started)
    started = time.perf_counter()
    while queue.pop() is not None:
        pass
    return tracked, statistics.median(pauses), (pushed + time.perf_counter() - started) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domains", type=int, nargs="+", default=[100, 1_000, 10_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--queued", type=int, default=200_000)
    args = parser.parse_args()
    print(f"{'domains':>8}{'this crawler µs/request':>25}{'stock µs/request':>18}{'ratio':>8}")
    for domains in args.domains:
        ours = _median_us(_ours, domains, args.rounds, args.runs)
        stock = _median_us(_stock, domains, args.rounds, args.runs)
        print(f"{domains:8d}{ours:25.1f}{stock:18.1f}{ours / stock:8.1f}")

    print(
        f"\n{args.queued:,} queued requests{'tracked objects':>22}{'full collection ms':>20}{'µs per push and pop':>21}"
    )
    gc.collect()
    gc.freeze()  # as the crawler does when the spider opens: only what is queued counts
    pauses = {}
    for label, queue_cls in (
        ("stock FifoMemoryQueue", FifoMemoryQueue),
        ("this crawler (bytes)", CompactFifoMemoryQueue),
    ):
        tracked, pauses[label], cost = _collector(queue_cls, args.queued, args.runs)
        print(f"{label:24}{tracked:22,d}{pauses[label] * 1e3:20.1f}{cost * 1e6:21.1f}")
    stock, ours = pauses.values()
    print(f"a full collection is {stock / ours:.0f}x shorter with the requests held as bytes")


if __name__ == "__main__":
    main()

"""The Bloom seen filter against the exact one: Redis bytes per URL, and false positives
measured over a million probes against what was configured.

    .venv/bin/python -m bench.bloom_filter [--count 1000000] [--probes 1000000]

Each filter runs in a Redis server of its own (started here with the RedisBloom module loaded,
stopped by its PID), so nothing else is counted. ``--count`` URLs of 1,000 sites are marked
seen; then ``--probes`` URLs never marked are checked, and each one found "seen" is a false
positive (a page that would never be crawled).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import redis
from scrapy import Request
from scrapy.utils.test import get_crawler

from crawler.seen.bloom import BloomSeenFilter
from crawler.seen.bloom_shape import BloomShape
from crawler.seen.exact import ExactSeenFilter
from crawler.seen.filter import MarkedSeenFilter
from tests.throwaway_redis import ThrowawayRedis, redisbloom_module

BATCH = 2_000


def fingerprints(fingerprinter, start: int, count: int) -> list[bytes]:
    """Scrapy's fingerprints of ``count`` realistic URLs, computed once for every filter."""
    return [
        fingerprinter.fingerprint(Request(f"https://www.site{n % 1000}.example/articles/section-{n % 40}/article-{n}"))
        for n in range(start, start + count)
    ]


def batches(items: list[bytes]) -> Iterator[list[bytes]]:
    for start in range(0, len(items), BATCH):
        yield items[start : start + BATCH]


def mark_all(client: redis.Redis, seen: MarkedSeenFilter, marked: list[bytes]) -> None:
    for batch in batches(marked):
        pipe = client.pipeline(transaction=False)
        for fingerprint in batch:
            seen.mark(seen.marker_of(fingerprint), pipe)
        pipe.execute()


def false_positives(client: redis.Redis, seen: BloomSeenFilter, probed: list[bytes]) -> int:
    found = 0
    for batch in batches(probed):
        pipe = client.pipeline(transaction=False)
        for fingerprint in batch:
            kind, key, *values = seen.marker_of(fingerprint)
            seen._check(keys=[key], args=[kind, *values], client=pipe)
        found += sum(pipe.execute())
    return found


def run(root: Path, label: str, make, marked: list[bytes], probed: list[bytes] | None) -> None:
    server = ThrowawayRedis(root / label, persistent=False, modules=[redisbloom_module()])
    server.start()
    try:
        client = redis.Redis.from_url(server.url)
        before = int(client.info("memory")["used_memory"])
        seen = make(client)  # RedisBloom takes its memory when the filter is reserved
        started = time.perf_counter()
        mark_all(client, seen, marked)
        elapsed = time.perf_counter() - started
        count = len(marked)
        per_url = (int(client.info("memory")["used_memory"]) - before) / count
        line = f"{label:<36} {per_url:7.2f} B/URL  {count / elapsed:9,.0f} marks/s"
        if probed:
            wrong = false_positives(client, seen, probed)
            line += f"  false positives {wrong:,} of {len(probed):,} = {wrong / len(probed):.2e}"
            line += f" (configured {seen.shape.error_rate:.0e})"
        print(line, flush=True)
        client.close()
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--probes", type=int, default=1_000_000)
    parser.add_argument("--rates", type=float, nargs="+", default=[1e-2, 1e-3, 1e-6])
    options = parser.parse_args()
    fingerprinter = get_crawler().request_fingerprinter
    marked = fingerprints(fingerprinter, 0, options.count)
    probed = fingerprints(fingerprinter, 10**10, options.probes)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        run(
            root,
            "exact (64-bit values in small sets)",
            lambda c: ExactSeenFilter(c, "seen", fingerprinter),
            marked,
            None,
        )
        for error_rate in options.rates:
            shape = BloomShape.for_capacity(options.count, error_rate)
            for use_module in (False, True):
                label = f"bloom {'RedisBloom' if use_module else 'SETBIT'} p={error_rate:.0e}"
                run(
                    root,
                    label,
                    lambda c, shape=shape, use_module=use_module: BloomSeenFilter(
                        c, "seen", fingerprinter, shape, use_module=use_module
                    ),
                    marked,
                    probed,
                )


if __name__ == "__main__":
    main()

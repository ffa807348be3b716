"""What ``frontier_scale --spill`` adds to the filled frontier: URLs spread over domains as a
crawl finds them (a few sites hold most links), a share of the domains blocked (cold), the
spill's movers in processes of their own as every worker runs one, and at the end some blocked
domains reopened and emptied through the pops while the movers bring their rows back.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import random
import time
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate

import redis
from scrapy import Request

from bench.frontier_memory import site_url
from crawler.frontier.spill import SpillMover
from crawler.politeness.slots import domain_key
from crawler.redis.link import RedisLink
from crawler.redis.store import FrontierConfig, FrontierStore
from crawler.settings import CRAWLER_SPILL_SECONDS
from crawler.storage import open_backend

CRAWL = "scale"
BLOCK_SECONDS = 86_400.0
"""A blocked domain stays blocked for the whole run (a 429, an open circuit, a paused site)."""
WEYL = 11400714819323198485
"""2^64 over the golden ratio: n * WEYL mod 2^64 spreads the n evenly over [0, 2^64)."""
PIPELINE = 1_000


def domain_of(site: int) -> str:
    return domain_key(Request(site_url(site)))


class ZipfSites:
    """The site of the n-th URL: site r (0 first) with weight 1 / (r + 1) ** exponent, the n
    spread evenly over the weights (a Weyl sequence: the same sites every run, no generator to
    carry from one tenth to the next)."""

    def __init__(self, sites: int, exponent: float):
        self.cumulative = list(accumulate(1 / (rank + 1) ** exponent for rank in range(sites)))

    def __call__(self, n: int) -> int:
        point = (n * WEYL % 2**64) / 2**64 * self.cumulative[-1]
        return min(bisect_left(self.cumulative, point), len(self.cumulative) - 1)


def cold_sites(sites: int, share: float, seed: int = 17) -> list[int]:
    """The sites blocked: each with probability ``share``, whatever its rank."""
    chooser = random.Random(seed)
    return [site for site in range(sites) if chooser.random() < share]


def hold(frontier: FrontierStore, domains: Iterable[str], seconds: float) -> int:
    """Block ``domains`` for ``seconds`` from now, as a 429 does; how many."""
    until = repr(frontier.now() + seconds)
    count, pipe = 0, frontier.client.pipeline(transaction=False)
    for domain in domains:
        frontier.update(domain, {"hold": until}, client=pipe)
        count += 1
        if count % PIPELINE == 0:
            pipe.execute()
    pipe.execute()
    return count


# --- the movers ----------------------------------------------------------------------------
@dataclass
class MoverTotals:
    """What the movers did, shared with their processes."""

    moved: multiprocessing.sharedctypes.Synchronized  # requests spilled to the table
    busy: multiprocessing.sharedctypes.Synchronized  # seconds spent in turns, all movers
    turns: multiprocessing.sharedctypes.Synchronized


def move(redis_url: str, database_url: str, prefix: str, config: FrontierConfig, stop, totals: MoverTotals) -> None:
    """A mover process: a turn every ``CRAWLER_SPILL_SECONDS``, as ``ColdDomains`` takes it."""
    client = redis.Redis.from_url(redis_url)
    store = FrontierStore(client, prefix, config)
    asyncio.run(_turns(store, client, database_url, stop, totals))


async def _turns(store: FrontierStore, client: redis.Redis, database_url: str, stop, totals: MoverTotals) -> None:
    backend = open_backend(database_url)
    await backend.open()
    mover = SpillMover(store, RedisLink(client), CRAWL)
    try:
        while not stop.is_set():
            started = time.monotonic()
            spilled, _ = await mover.turn(backend)
            with totals.moved.get_lock():
                totals.moved.value += spilled
            with totals.busy.get_lock():
                totals.busy.value += time.monotonic() - started
            with totals.turns.get_lock():
                totals.turns.value += 1
            await asyncio.sleep(CRAWLER_SPILL_SECONDS)
    finally:
        await backend.close()


class Movers:
    """``count`` mover processes, started and stopped (joined) here."""

    def __init__(self, count: int, redis_url: str, database_url: str, prefix: str, config: FrontierConfig):
        context = multiprocessing.get_context("spawn")
        self.stop = context.Event()
        self.totals = MoverTotals(context.Value("q", 0), context.Value("d", 0.0), context.Value("q", 0))
        self.processes = [
            context.Process(target=move, args=(redis_url, database_url, prefix, config, self.stop, self.totals))
            for _ in range(count)
        ]

    def __enter__(self) -> Movers:
        for process in self.processes:
            process.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for process in self.processes:
            process.join(timeout=CRAWLER_SPILL_SECONDS + 60)
            if process.is_alive():
                process.terminate()

    def moved(self) -> int:
        return self.totals.moved.value

    def settle(self, patience: float = 3 * CRAWLER_SPILL_SECONDS) -> float:
        """Wait until the movers move nothing for ``patience`` seconds after a turn; the seconds
        until then (their backlog)."""
        started = time.monotonic()
        last, quiet_since = self.moved(), time.monotonic()
        while time.monotonic() - quiet_since < patience:
            time.sleep(1.0)
            if (moved := self.moved()) != last:
                last, quiet_since = moved, time.monotonic()
        return quiet_since - started


# --- the reopened domains --------------------------------------------------------------------
def queued_in_redis(frontier: FrontierStore, domains: list[str]) -> int:
    """Requests of ``domains`` queued in Redis (their lists, over their priorities)."""
    client = frontier.client
    with client.pipeline(transaction=False) as pipe:
        for domain in domains:
            pipe.zrange(frontier.domain_part(domain, "qp", domain), 0, -1)
        priorities = pipe.execute()
    with client.pipeline(transaction=False) as pipe:
        for domain, prios in zip(domains, priorities, strict=True):
            for prio in prios:
                pipe.llen(frontier.domain_part(domain, "q", domain, prio.decode()))
        return sum(pipe.execute())


@dataclass(frozen=True)
class Drain:
    handed_out: int
    seconds: float
    repeated: int
    """Requests handed out twice."""
    left_in_table: int
    """Rows of the reopened domains still in the table when the pops stopped finding work."""


def drain(frontier: FrontierStore, rows_left, patience: float = 6 * CRAWLER_SPILL_SECONDS) -> Drain:
    """Hand out and acknowledge everything poppable (the reopened domains' requests: every
    other domain is held) as fast as the pops go, while the movers refill; stops once
    ``rows_left()`` is 0 and nothing pops, or nothing came for ``patience`` seconds."""
    keys: set[str] = set()
    handed_out, repeated = 0, 0
    started = last_pop = time.monotonic()
    while True:
        popped = 0
        for shard in frontier.shards:
            batch = frontier.pop_many(100, shard=shard)
            with frontier.client.pipeline(transaction=False) as pipe:
                for entry in batch.popped:
                    if entry.kind != "request":
                        continue
                    key = entry.request.partition("\t")[0]
                    repeated += key in keys
                    keys.add(key)
                    frontier.finish(entry.domain, key, client=pipe)
                    frontier.ack_in(shard, [key], pipe)
                    popped += 1
                pipe.execute()
        handed_out += popped
        if popped:
            last_pop = time.monotonic()
            continue
        left = rows_left()
        if not left or time.monotonic() - last_pop > patience:
            return Drain(handed_out, last_pop - started, repeated, left)
        time.sleep(0.2)

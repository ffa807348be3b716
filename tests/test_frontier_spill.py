"""Cold domains in PostgreSQL: the tail of a long queue of a domain that will not be ready soon
moves to ``frontier_spill`` and comes back when the domain's queue runs low; against the real
Redis and PostgreSQL, the frontier on a fake clock. A mover killed between its steps loses
nothing."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from crawler.frontier.spill import SpillMover
from crawler.redis.link import RedisLink
from crawler.redis.store import FrontierConfig, FrontierStore
from crawler.storage import open_backend
from crawler.storage.backend import StorageBackend
from tests.conftest import REDIS_URL
from tests.helpers import Database, FakeClock, crawl_keys, crawl_store, finish_all, run_scrapy, start_crawl
from tests.testweb import TestWeb

pytestmark = [pytest.mark.redis, pytest.mark.postgres]

ABOVE, KEEP = 20, 8


@pytest.fixture
def store(redis_client: redis.Redis, crawl_name: str, clock: FakeClock) -> FrontierStore:
    return _store(redis_client, crawl_name, clock)


def _store(client: redis.Redis, name: str, clock: FakeClock, **config: object) -> FrontierStore:
    settings: dict[str, object] = {
        "default_delay": 60.0,  # every domain cold between its requests
        "default_concurrency": 1,
        "robots": False,
        "lease_seconds": 300.0,
        "spill_above": ABOVE,
        "spill_keep": KEEP,
        "spill_cold_seconds": 30.0,
        **config,
    }
    return FrontierStore(client, crawl_keys(name), FrontierConfig(**settings), clock=clock, shards=4)  # type: ignore[arg-type]


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture
def backend(postgres_database: Database, loop: asyncio.AbstractEventLoop) -> Iterator[StorageBackend]:
    opened = open_backend(postgres_database.url)
    loop.run_until_complete(opened.open())
    yield opened
    loop.run_until_complete(opened.close())


def _mover(store: FrontierStore, name: str, claimant: str = "mover-1") -> SpillMover:
    return SpillMover(store, RedisLink(store.client), name, claimant)  # a link not started runs at once


def _push(store: FrontierStore, domain: str, count: int, priority: int = 0, start: int = 0) -> list[str]:
    urls = [f"http://{domain}/{n}" for n in range(start, start + count)]
    for url in urls:
        store.push(domain, priority, f"{url}\t{{}}")
    return urls


def _drain(store: FrontierStore, clock: FakeClock) -> list[str]:
    """Every request of the frontier, popped one slot at a time (each acknowledged)."""
    urls = []
    while (popped := store.pop()).kind != "none" or popped.next_ready is not None:
        if popped.kind == "none":
            clock.now = max(clock.now, popped.next_ready) + 0.001  # type: ignore[type-var]
            continue
        key, _, _ = popped.request.partition("\t")
        urls.append(key)
        store.sent(popped.domain)
        store.finish(popped.domain, key)
        store.ack([key], popped.domain)
    return urls


def _next(store: FrontierStore, clock: FakeClock) -> str:
    """The URL of the next request, a slot later; gone and acknowledged."""
    clock.now += 60.001
    popped = store.pop()
    assert popped.kind == "request", popped
    key = popped.request.partition("\t")[0]
    store.sent(popped.domain)
    store.finish(popped.domain, key)
    store.ack([key], popped.domain)
    return key


def _rows(database: Database) -> list[str]:
    return [request.partition("\t")[0] for (request,) in database.query("SELECT request FROM frontier_spill")]


def _cold(store: FrontierStore, domain: str) -> None:
    """The domain's next slot a minute away: its first request handed out and gone."""
    popped = store.pop()
    assert popped.kind == "request" and popped.domain == domain
    key = popped.request.partition("\t")[0]
    store.sent(domain)
    store.finish(domain, key)
    store.ack([key], domain)


def test_a_cold_domains_tail_moves_to_the_table_and_comes_back_in_priority_order_when_its_queue_runs_low(
    store: FrontierStore,
    backend: StorageBackend,
    loop: asyncio.AbstractEventLoop,
    crawl_name: str,
    postgres_database: Database,
    clock: FakeClock,
) -> None:
    low = _push(store, "a", 30, priority=0)
    high = _push(store, "a", 10, priority=5, start=100)
    _cold(store, "a")  # http://a/100, the highest priority first
    mover = _mover(store, crawl_name)
    spilled, refilled = loop.run_until_complete(mover.turn(backend))
    assert (spilled, refilled) == (39 - KEEP, [])
    sizes = store.sizes()
    assert (sizes.queued, sizes.spilled) == (KEEP, 39 - KEEP) and not sizes.empty
    assert [(row["queued"], row["spilled"]) for row in store.domains()] == [(KEEP, 39 - KEEP)]
    assert _rows(postgres_database) == low + high[9:]  # the tail: every lower priority, then the newest
    assert loop.run_until_complete(mover.turn(backend)) == (0, [])  # nothing more to move

    fetched = [_next(store, clock) for _ in range(KEEP - KEEP // 2 + 1)]  # under KEEP/2 left in Redis
    assert fetched == high[1:6]
    assert loop.run_until_complete(mover.turn(backend)) == (0, ["a"])
    sizes = store.sizes()
    assert (sizes.queued, sizes.spilled) == (KEEP, 31 - 5)  # filled back to KEEP
    rest = _drain(store, clock)
    while loop.run_until_complete(mover.turn(backend)) != (0, []):
        rest += _drain(store, clock)
    assert Counter([high[0], *fetched, *rest]) == Counter(low + high)  # each once
    assert rest == high[6:] + low  # highest priority first, each priority in its order
    assert store.sizes().empty and _rows(postgres_database) == []


@pytest.mark.integration
def test_clearing_a_crawl_drops_the_requests_it_spilled_too(
    store: FrontierStore,
    backend: StorageBackend,
    loop: asyncio.AbstractEventLoop,
    crawl_name: str,
    postgres_database: Database,
) -> None:
    _push(store, "a", 30)
    _cold(store, "a")
    assert loop.run_until_complete(_mover(store, crawl_name).turn(backend)) == (29 - KEEP, [])
    cleared = run_scrapy(postgres_database, "frontier", crawl_name, "--clear", "-s", f"REDIS_URL={REDIS_URL}")
    assert cleared.returncode == 0, cleared.stderr[-2000:]
    assert "spilled requests dropped" in cleared.stdout and f", {29 - KEEP} spilled" in cleared.stdout
    assert _rows(postgres_database) == [] and store.sizes().queued == 0


def test_a_long_tail_spills_in_several_moves_down_to_the_kept_requests(store: FrontierStore) -> None:
    _push(store, "a", ABOVE + 10)
    _cold(store, "a")
    moves = 0
    while (spill := store.spill_take(store.shard_of("a"), "mover", 5)) is not None:
        assert len(spill.entries) <= 5 and store.spill_remove(spill, "mover") == [True] * len(spill.entries)
        moves += 1
    assert moves == 5 and (store.sizes().queued, store.sizes().spilled) == (KEEP, ABOVE + 9 - KEEP)


def test_a_domain_that_sends_its_kept_requests_soon_or_queues_few_never_spills(
    store: FrontierStore, backend: StorageBackend, loop: asyncio.AbstractEventLoop, crawl_name: str
) -> None:
    _push(store, "short", ABOVE)
    _cold(store, "short")
    _push(store, "ready", 40)  # never handed out: ready now, and its kept 8 go within 30 s
    store.update("ready", {"delay": 3.0})
    assert loop.run_until_complete(_mover(store, crawl_name).turn(backend)) == (0, [])
    assert store.sizes().queued == 40 + ABOVE - 1


def test_a_long_queue_of_a_domain_ready_now_spills_the_tail_its_delay_puts_far_away(
    store: FrontierStore, backend: StorageBackend, loop: asyncio.AbstractEventLoop, crawl_name: str
) -> None:
    _push(store, "big", 40)  # ready now, but at 5 s a request the ninth goes in 40 s
    store.update("big", {"delay": 5.0})
    assert loop.run_until_complete(_mover(store, crawl_name).turn(backend)) == (40 - KEEP, [])
    assert (store.sizes().queued, store.sizes().spilled) == (KEEP, 40 - KEEP)


def test_a_mover_killed_after_writing_the_rows_loses_nothing_and_a_later_one_moves_the_domain(
    redis_client: redis.Redis,
    store: FrontierStore,
    backend: StorageBackend,
    loop: asyncio.AbstractEventLoop,
    crawl_name: str,
    postgres_database: Database,
    clock: FakeClock,
) -> None:
    urls = _push(store, "a", 30)
    _cold(store, "a")
    short_claims = _store(redis_client, crawl_name, clock, mover_claim_seconds=0.2)
    dead = _mover(short_claims, crawl_name, "dead")
    # Its first steps, then it dies: the rows written, nothing removed from Redis.
    spill = short_claims.spill_take(short_claims.shard_of("a"), dead.claimant, 500)
    assert spill is not None and len(spill.entries) == 29 - KEEP
    loop.run_until_complete(_write(backend, crawl_name, spill))
    assert len(_rows(postgres_database)) == 29 - KEEP
    assert store.sizes().queued == 29 and store.sizes().spilled == 0  # every request still in Redis
    live = _mover(store, crawl_name)
    assert loop.run_until_complete(live.turn(backend)) == (0, [])  # the dead mover's claim holds
    asyncio_sleep(loop, 0.3)  # ... until it expires
    assert loop.run_until_complete(live.turn(backend)) == (29 - KEEP, [])
    # The dead mover's rows stay beside the live one's: a duplicate at worst, never a loss.
    assert Counter(_rows(postgres_database)) == Counter({url: 2 for url in urls[KEEP + 1 :]})
    rest = _drain(store, clock)
    while loop.run_until_complete(live.turn(backend)) != (0, []):
        rest += _drain(store, clock)
    assert set(rest) == set(urls[1:]) and store.sizes().empty


class _PopsBeforeRemoval:
    """The link of a mover, through which ``pops`` requests are handed out (by other workers)
    between its writing the rows and its removing their entries from Redis."""

    def __init__(self, store: FrontierStore, clock: FakeClock, pops: int):
        self.store, self.clock, self.pops, self.calls = store, clock, pops, 0

    async def run(self, function):  # type: ignore[no-untyped-def]
        self.calls += 1
        if self.calls == 2:
            for _ in range(self.pops):
                _next(self.store, self.clock)
        return function(self.store.client)


def test_rows_of_requests_handed_out_while_they_were_written_are_deleted(
    store: FrontierStore,
    backend: StorageBackend,
    loop: asyncio.AbstractEventLoop,
    crawl_name: str,
    postgres_database: Database,
    clock: FakeClock,
) -> None:
    urls = _push(store, "a", 30)
    _cold(store, "a")
    mover = SpillMover(store, _PopsBeforeRemoval(store, clock, 12), crawl_name)
    assert loop.run_until_complete(mover.spill_one(backend, store.shard_of("a"))) == 29 - KEEP - 4
    # urls 1-12 handed out: 9-12 were in the tail, their rows go; 13-29 are in the table only.
    assert sorted(_rows(postgres_database)) == sorted(urls[13:])
    sizes = store.sizes()
    assert (sizes.queued, sizes.spilled) == (0, 17) and not sizes.empty  # no worker ends the crawl now
    rest = _drain(store, clock)
    while loop.run_until_complete(_mover(store, crawl_name).turn(backend)) != (0, []):
        rest += _drain(store, clock)
    assert rest == urls[13:] and store.sizes().empty


def test_a_spill_whose_claim_was_lost_removes_nothing(
    store: FrontierStore, backend: StorageBackend, loop: asyncio.AbstractEventLoop, crawl_name: str
) -> None:
    _push(store, "a", 30)
    _cold(store, "a")
    mover = _mover(store, crawl_name)
    spill = store.spill_take(store.shard_of("a"), mover.claimant, 500)
    assert spill is not None
    assert store.spill_remove(spill, "another mover") is None  # not its claim: nothing removed
    assert store.sizes().queued == 29 and store.sizes().spilled == 0
    assert store.spill_remove(spill, mover.claimant) == [True] * (29 - KEEP)
    assert store.sizes().queued == KEEP and store.sizes().spilled == 29 - KEEP
    assert store.spill_remove(spill, mover.claimant) is None  # the claim ended with the move


def test_a_refill_whose_claim_was_lost_queues_nothing_and_keeps_the_rows(
    store: FrontierStore,
    backend: StorageBackend,
    loop: asyncio.AbstractEventLoop,
    crawl_name: str,
    postgres_database: Database,
    clock: FakeClock,
) -> None:
    _push(store, "a", 30)
    _cold(store, "a")
    mover = _mover(store, crawl_name)
    loop.run_until_complete(mover.turn(backend))
    for _ in range(KEEP - KEEP // 2 + 1):
        _next(store, clock)
    taken = store.refill_take(store.shard_of("a"), "someone")
    assert taken is not None and taken[1] == "a"
    queued = store.sizes().queued
    assert store.refill("a", mover.claimant, [(0, "http://a/x\t{}")], more=True) is None
    assert store.sizes().queued == queued and len(_rows(postgres_database)) == 29 - KEEP
    assert store.refill_take(store.shard_of("a"), mover.claimant) is None  # claimed until it expires


def test_rows_of_an_earlier_run_are_forgotten_and_never_read(
    redis_client: redis.Redis,
    store: FrontierStore,
    backend: StorageBackend,
    loop: asyncio.AbstractEventLoop,
    crawl_name: str,
    postgres_database: Database,
    clock: FakeClock,
) -> None:
    _push(store, "a", 30)
    _cold(store, "a")
    loop.run_until_complete(_mover(store, crawl_name).turn(backend))
    assert len(_rows(postgres_database)) == 29 - KEEP
    store.complete()  # the run ends (a leftover row stays), and the crawl starts again
    store.begin()
    assert store.sizes().empty
    assert loop.run_until_complete(_mover(store, crawl_name).forget_other_runs(backend)) == 29 - KEEP
    assert _rows(postgres_database) == []


async def _write(backend: StorageBackend, crawl: str, spill) -> None:  # type: ignore[no-untyped-def]
    from crawler.storage.spilled_requests import write_spilled

    await write_spilled(backend, crawl, spill.run, spill.domain, spill.entries)


def asyncio_sleep(loop: asyncio.AbstractEventLoop, seconds: float) -> None:
    loop.run_until_complete(asyncio.sleep(seconds))


@pytest.mark.integration
def test_a_shared_crawl_spilling_at_a_tiny_threshold_fetches_every_page_once_at_its_pace(
    web: TestWeb, postgres_database: Database, crawl_name: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    web.clear()
    settings = {
        "REDIS_URL": REDIS_URL,
        "CRAWLER_CRAWL_ID": crawl_name,
        "CRAWLER_IDLE_CLOSE_SECONDS": "3",
        "CRAWLER_SPILL_ABOVE": "10",
        "CRAWLER_SPILL_KEEP": "4",
        "CRAWLER_SPILL_COLD_SECONDS": "0",  # between two requests, a paced domain is cold
        "CRAWLER_SPILL_SECONDS": "0.2",
    }
    logs = [tmp_path / f"worker-{n}.log" for n in range(2)]
    workers = [start_crawl("links", postgres_database, log, url=web.url("shared"), settings=settings) for log in logs]
    outputs = finish_all(workers, logs, 240)
    for worker, output in zip(workers, outputs):
        assert worker.returncode == 0 and "Traceback" not in output, output[-5000:]
    moved = sum(int(n) for output in outputs for n in re.findall(r"'frontier/spill_moved': (\d+)", output))
    refills = sum(int(n) for output in outputs for n in re.findall(r"'frontier/spill_refills': (\d+)", output))
    assert moved > 0 and refills > 0, (moved, refills)
    log = web.log("shared")
    fetched = Counter(entry.path for entry in log)
    assert [path for path, n in fetched.items() if n > 1] == []
    starts = sorted(entry.start for entry in log)
    assert min(b - a for a, b in zip(starts, starts[1:])) >= 0.05 - 0.010  # Crawl-delay 0.05
    rows = {url.removeprefix(web.base("shared")) for url in postgres_database.pages()}
    assert rows == {"/", "/private/page"} | {f"/p/{n}" for n in range(150)}
    assert _rows(postgres_database) == []
    assert crawl_store(redis_client, crawl_name).sizes().empty

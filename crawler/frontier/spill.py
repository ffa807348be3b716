"""Cold domains in PostgreSQL: a shared crawl's Redis holds the queues of domains that may be
handed out soon; the tail of a long queue that will not be handed out soon (a long delay, a
block, an open circuit, or a big site whose kept requests alone take long at its delay) moves
to the ``frontier_spill`` table, and comes back when the
domain's queue in Redis runs low. Redis memory grows with the active domains, not with the URLs
discovered; the politeness state of every domain stays in Redis, so pacing never sees the
difference.

A mover (every worker runs one: ``crawler.extensions.cold_domains``) does one domain at a time,
holding a claim on it in Redis, in an order that never loses a request:

- spill: write the tail to the table, then remove from Redis exactly the entries still queued,
  then delete the rows whose entries had left (popped meanwhile);
- refill: read the domain's first rows, queue them again in Redis (without the seen filter: they
  were seen), then delete those rows.

A mover killed between two steps leaves a request in both places: it may be fetched twice, never
lost. A mover whose claim expired finds it gone at its Redis step and changes nothing there.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import Any

from crawler.redis.store import FrontierStore
from crawler.storage.backend import StorageBackend
from crawler.storage.spilled_requests import delete_spilled, forget_other_runs, read_spilled, write_spilled

SPILL_BATCH = 500
"""Requests moved to the table in one step at most (one statement, one script call)."""
MOVES_PER_SHARD = 4
"""Spill steps (a batch each), and refills, a mover takes in a shard at each turn at most."""


class SpillMover:
    """One process's moves of cold domains between a shared crawl's Redis and the table."""

    def __init__(self, store: FrontierStore, link: Any, crawl: str, claimant: str | None = None):
        """``link``: the crawl's ``RedisLink`` (``run`` calls the store off the reactor)."""
        self.store = store
        self.link = link
        self.crawl = crawl
        self.claimant = claimant or uuid.uuid4().hex
        """This mover's name in its claims."""

    async def forget_other_runs(self, backend: StorageBackend) -> int:
        """Delete the crawl's rows an earlier run left (rows a killed mover left behind, their
        requests queued or fetched); how many."""
        runs = await self.link.run(lambda _: self.store.spill_runs(self.claimant))
        return await forget_other_runs(backend, self.crawl, runs)

    async def spill_one(self, backend: StorageBackend, shard: str) -> int | None:
        """Spill the tail of one cold domain's queue of ``shard``: how many requests left Redis;
        None if no domain was to spill."""
        store, claimant = self.store, self.claimant
        spill = await self.link.run(lambda _: store.spill_take(shard, claimant, SPILL_BATCH))
        if spill is None:
            return None
        rows = await write_spilled(backend, self.crawl, spill.run, spill.domain, spill.entries)
        removed = await self.link.run(lambda _: store.spill_remove(spill, claimant))
        if removed is None:
            return 0  # another mover has the domain: these rows stay, a duplicate at worst
        ids = defaultdict(list)
        for row_id, priority, request in rows:
            ids[priority, request].append(row_id)
        # The rows of entries that had left the queue (handed out meanwhile) go.
        left = [ids[entry].pop() for entry, was_queued in zip(spill.entries, removed, strict=True) if not was_queued]
        await delete_spilled(backend, left)
        return sum(removed)

    async def refill_one(self, backend: StorageBackend, shard: str) -> str | None:
        """Bring some requests of one domain of ``shard`` whose queue ran low back from the
        table: the domain, or None if none was due."""
        store, claimant = self.store, self.claimant
        taken = await self.link.run(lambda _: store.refill_take(shard, claimant))
        if taken is None:
            return None
        run, domain, wanted = taken
        rows = await read_spilled(backend, run, domain, wanted + 1)
        entries = [(priority, request) for _, priority, request in rows[:wanted]]
        brought = await self.link.run(lambda _: store.refill(domain, claimant, entries, len(rows) > wanted))
        if brought is not None:
            await delete_spilled(backend, [row_id for row_id, _, _ in rows[:wanted]])
        return domain

    async def turn(self, backend: StorageBackend) -> tuple[int, list[str]]:
        """One turn over every shard: refills first (a domain waiting for its requests), then
        spills. The requests spilled, and the domains refilled."""
        spilled, refilled = 0, []
        for shard in self.store.shards:
            for _ in range(MOVES_PER_SHARD):
                if (domain := await self.refill_one(backend, shard)) is None:
                    break
                refilled.append(domain)
            for _ in range(MOVES_PER_SHARD):
                if (moved := await self.spill_one(backend, shard)) is None:
                    break
                spilled += moved
        return spilled, refilled

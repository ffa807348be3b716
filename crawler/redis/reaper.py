"""Reclaim a shared crawl whose workers all died: every use of the frontier stamps the crawl
as alive (``P:alive``, by the server's clock); a crawl not used for the reap time, killed
before its last worker could close it, would otherwise swallow the next identical run (every
URL seen, nothing queued). Runs in the link's I/O thread."""

from __future__ import annotations

import time

import redis

from crawler.redis.keys import delete_matching
from crawler.redis.store import FrontierStore

CLAIM_SECONDS = 60
"""How long a reclaim may take before another worker may try."""


def reclaim_if_dead(frontier: FrontierStore, reap_seconds: float) -> int:
    """Delete the crawl's keys if no worker used them for ``reap_seconds`` (0: never); the
    number deleted. Of workers starting together, one deletes and the others wait for it."""
    if reap_seconds <= 0:
        return 0
    client = frontier.client
    alive, claim = frontier.key("alive"), frontier.key("reclaiming")
    with client.pipeline() as pipe:
        try:
            pipe.watch(alive, claim)
            last = pipe.get(alive)
            if pipe.exists(claim):
                pipe.unwatch()
                _wait_for(client, claim)
                return 0
            if last is None or frontier.now() - float(last) < reap_seconds:
                return 0
            pipe.multi()
            pipe.set(claim, 1, ex=CLAIM_SECONDS)
            pipe.set(alive, repr(frontier.now()))
            pipe.execute()
        except redis.WatchError:  # another worker used or claimed the crawl meanwhile
            _wait_for(client, claim)
            return 0
    deleted = delete_matching(client, f"{frontier.prefix}:*", keep={alive.encode(), claim.encode()})
    client.delete(claim)
    return deleted


def _wait_for(client: redis.Redis, claim: str) -> None:
    deadline = time.monotonic() + CLAIM_SECONDS
    while client.exists(claim) and time.monotonic() < deadline:
        time.sleep(0.1)  # in the I/O thread, never on the reactor

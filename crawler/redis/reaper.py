"""Reclaim a shared crawl whose workers all died: every use of the frontier stamps the crawl
as alive (``alive``, by the server's clock); a crawl not used for the reap time, killed
before its last worker could close it, would otherwise swallow the next identical run (every
URL seen, nothing queued). Runs in the link's I/O thread."""

from __future__ import annotations

import time

import redis

from crawler.redis.store import FrontierStore

CLAIM_SECONDS = 60
"""How long a reclaim may take before another worker may try."""


def reclaim_if_dead(frontier: FrontierStore, reap_seconds: float) -> int:
    """Delete the crawl's keys if no worker used them for ``reap_seconds`` (0: never); the
    number deleted. Of workers starting together, one deletes and the others wait for it."""
    if reap_seconds <= 0:
        return 0
    client = frontier.client
    claim = frontier.key("reclaiming")
    # One command takes the claim (a transaction could not watch keys of several slots of a cluster).
    if not client.set(claim, 1, nx=True, ex=CLAIM_SECONDS):
        _wait_for(client, claim)
        return 0
    try:
        last = frontier.last_used()
        if last is None or frontier.now() - last < reap_seconds:
            return 0
        # The shard count stays: this process routes by it already.
        return frontier.delete_all(keep={claim.encode(), frontier.key("shards").encode()})
    finally:
        client.delete(claim)


def _wait_for(client: redis.Redis, claim: str) -> None:
    deadline = time.monotonic() + CLAIM_SECONDS
    while client.exists(claim) and time.monotonic() < deadline:
        time.sleep(0.1)  # in the I/O thread, never on the reactor

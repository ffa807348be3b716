"""Whether a shared crawl's Redis answers at a worker's start, waited for like the database: a
worker started by a supervisor while Redis restarts joins it once it is back, and one that
cannot reach it ends with a line that says so (exit status 10), not a traceback."""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import urlsplit


def redis_address(url: str) -> str:
    """Where ``url`` points, without its password: ``host:port``."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return parts.path
    return f"{parts.hostname or 'localhost'}:{parts.port or 6379}"


TRY_EVERY_SECONDS = 1.0


def wait_for_redis(url: str, timeout: float, *, say: Callable[[str], None]) -> str | None:
    """None once Redis at ``url`` answers a PING, else why not after ``timeout`` seconds (tried
    every second; ``say`` hears of the first failure). Runs before the reactor starts."""
    import redis  # only shared crawls pay for its import

    deadline = time.monotonic() + timeout
    every = TRY_EVERY_SECONDS
    client = redis.Redis.from_url(url, socket_timeout=every, socket_connect_timeout=every)
    said = False
    try:
        while True:
            try:
                client.ping()
                return None
            except redis.RedisError as exc:
                # Anything but an unreachable server (a password refused, a wrong database) waits not.
                if isinstance(exc, redis.AuthenticationError) or not isinstance(
                    exc, redis.ConnectionError | redis.TimeoutError
                ):
                    return f"Redis at {redis_address(url)} refused the worker: {exc}"
                if time.monotonic() >= deadline:
                    return f"Redis at {redis_address(url)} unreachable for {timeout:g} s (CRAWLER_REDIS_CONNECT_TIMEOUT): {exc}"
                if not said:
                    say(f"Redis at {redis_address(url)} unreachable ({exc}); waiting up to {timeout:g} s for it")
                    said = True
                time.sleep(every)
    finally:
        client.close()

"""The process's Redis, off the reactor: every command goes through one I/O thread, in order,
many to a pipeline.

Components queue operations (``Op``) and get their results back on the reactor thread through
``done``; nothing on the reactor waits for Redis. While Redis does not answer (refused, dropped
packets, ``READONLY`` after a failover, ``OOM``), the operations stay queued in order and are
tried again every ``CRAWLER_REDIS_RETRY_SECONDS`` without sleeping the reactor: the crawl pauses
and resumes. Each attempt is bounded by the socket timeouts; redis-py's own retries with sleeps
are off (``redis_client``).

Until ``start``, the same operations run at once in the caller's thread (commands and tests
that have no reactor).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import redis
from redis.client import Pipeline

logger = logging.getLogger(__name__)

T = TypeVar("T")

REDIS_ERRORS = (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError, redis.OutOfMemoryError)
"""Redis unavailable, for now: the operation is tried again later (a replica promoted, memory
freed, the network back)."""


class LinkClosed(redis.ConnectionError):
    """The link closed with the scheduler while the spider closes: Redis is gone for this
    process, as if unavailable, so that what still runs until ``spider_closed`` (a heartbeat, a
    control poll) takes the path it takes in an outage instead of failing."""


PIPELINE_SIZE = 1_000
"""Commands sent in one round trip at most: a backlog after an outage goes in several."""


@dataclass(slots=True)
class Op:
    """One Redis operation: ``send`` queues exactly one command on a pipeline, or ``run`` does
    whatever it needs with the client (an optimistic transaction); ``done`` gets the result."""

    send: Callable[[Pipeline], Any] | None = None
    run: Callable[[redis.Redis], Any] | None = None
    done: Callable[[Any], None] | None = None


class RedisLink:
    def __init__(self, client: redis.Redis):
        self.client = client
        self.retry_seconds = 1.0
        self.stats: Any = None
        self.started = False
        self.closed = False
        self.outage_since: float | None = None
        self._ops: deque[Op] = deque()
        self._executor: ThreadPoolExecutor | None = None
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._busy = False
        self.first_on_retry: list[Callable[[], Op | None]] = []
        """Operations put first whenever the link tries again after an outage (renewing the
        leases this process holds, before anything else may reclaim them)."""

    def start(self, retry_seconds: float, stats: Any) -> None:
        """From now on, operations go through the I/O thread (call on the reactor's loop)."""
        self.retry_seconds = retry_seconds
        self.stats = stats
        self.started = True
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="redis")
        self._wakeup = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._flush_loop())

    @property
    def available(self) -> bool:
        return self.outage_since is None

    @property
    def pending(self) -> int:
        return len(self._ops)

    def submit(self, op: Op) -> None:
        if not self.started:
            _run_now(self.client, op)
            return
        self._ops.append(op)
        assert self._wakeup is not None
        self._wakeup.set()

    async def run(self, function: Callable[[redis.Redis], T]) -> T:
        """``function(client)`` in the I/O thread (or at once before ``start``); Redis errors
        reach the caller."""
        if not self.started:
            return function(self.client)
        if self.closed:
            raise LinkClosed("the Redis link is closed")
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, self.client)

    async def drain(self, timeout: float) -> bool:
        """Wait until every queued operation is sent; False if Redis stayed away ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while self._ops or self._busy:
            if time.monotonic() > deadline:
                logger.error("Redis unavailable: %d operations could not be sent", len(self._ops))
                return False
            await asyncio.sleep(0.05)
        return True

    def close(self) -> None:
        self.closed = True
        if self._task is not None:
            self._task.cancel()
        if self._executor is not None:
            self._executor.shutdown(wait=False)

    async def _flush_loop(self) -> None:
        assert self._wakeup is not None and self._executor is not None
        loop = asyncio.get_running_loop()
        while True:
            if not self._ops:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            batch = [self._ops.popleft() for _ in range(min(PIPELINE_SIZE, len(self._ops)))]
            results: list[Any] = []
            self._busy = True
            try:
                error = await loop.run_in_executor(self._executor, _execute, self.client, batch, results)
            finally:
                self._busy = False
            for op, result in zip(batch, results):
                if op.done is not None:
                    op.done(result)
            if error is None:
                self._recovered()
                continue
            self._ops.extendleft(reversed(batch[len(results) :]))  # tried again, in order
            self._unavailable(error)
            await asyncio.sleep(self.retry_seconds)  # the reactor goes on meanwhile
            for first in self.first_on_retry:
                if (op := first()) is not None:
                    self._ops.appendleft(op)

    def _unavailable(self, error: Exception) -> None:
        if self.stats is not None:
            self.stats.inc_value("frontier/redis_errors")
        if self.outage_since is None:
            self.outage_since = time.monotonic()
            logger.warning(
                "Redis unavailable (%s: %s): the worker pauses and keeps %d operations in memory",
                type(error).__name__,
                error,
                len(self._ops),
            )

    def _recovered(self) -> None:
        if self.outage_since is not None:
            logger.info("Redis available again after %.1f s", time.monotonic() - self.outage_since)
            self.outage_since = None


def _execute(client: redis.Redis, batch: list[Op], results: list[Any]) -> Exception | None:
    """In the I/O thread: run ``batch`` in order, appending each result to ``results``; the
    error that stopped it (Redis unavailable), or None. Other errors are logged and their
    operations dropped: trying them again would fail the same way."""
    try:
        position = 0
        while position < len(batch):
            op = batch[position]
            if op.run is not None:
                results.append(_checked(op.run(client)))
                position += 1
                continue
            end = position
            with client.pipeline(transaction=False) as pipe:
                while end < len(batch) and batch[end].send is not None:
                    batch[end].send(pipe)  # type: ignore[misc]
                    end += 1
                answers = pipe.execute(raise_on_error=False)
            for answer in answers:
                if isinstance(answer, REDIS_ERRORS):
                    return answer
                results.append(_checked(answer))
            position = end
    except REDIS_ERRORS as exc:
        return exc
    return None


def _checked(answer: Any) -> Any:
    if isinstance(answer, Exception):
        logger.error("A Redis operation failed and is dropped: %r", answer)
        return None
    return answer


def _run_now(client: redis.Redis, op: Op) -> None:
    if op.run is not None:
        result = op.run(client)
    else:
        assert op.send is not None
        with client.pipeline(transaction=False) as pipe:
            op.send(pipe)
            (result,) = pipe.execute()
    if op.done is not None:
        op.done(result)

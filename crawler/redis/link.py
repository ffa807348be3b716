"""The process's Redis, off the reactor: every command goes through one I/O thread, in order,
many to a pipeline.

Components queue operations (``Op``) and get their results back on the reactor thread through
``done``; nothing on the reactor waits for Redis. While Redis does not answer (refused, dropped
packets, ``READONLY`` after a failover, ``OOM``; in a cluster also a failover in progress:
``CLUSTERDOWN``, ``TRYAGAIN``, a master that does not answer, slots not covered), the operations
stay queued in order and are tried again every ``CRAWLER_REDIS_RETRY_SECONDS`` without sleeping
the reactor: the crawl pauses and resumes. Each attempt is bounded by the socket timeouts;
redis-py's own retries with sleeps are off (``redis_client``). A cluster's ``MOVED`` and ``ASK``
are followed by redis-py's cluster client, which reads the cluster's slots again; a node that
does not know a script (a promoted replica) gets every script of the process and the operation
is sent again.

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
from redis.exceptions import AskError, ClusterError, RedisClusterException, TryAgainError

from crawler.redis.scripts import is_missing_script, load_scripts, with_scripts

logger = logging.getLogger(__name__)

T = TypeVar("T")

REDIS_ERRORS = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.ReadOnlyError,
    redis.OutOfMemoryError,
    ClusterError,
    TryAgainError,
    AskError,
    RedisClusterException,
)
"""Redis unavailable, for now: the operation is tried again later (a replica promoted, memory
freed, the network back, a cluster's slots moved or covered again). ``ClusterError`` is a
cluster down or a master down, ``AskError`` also a ``MOVED`` that outlived redis-py's own
redirections, ``RedisClusterException`` a cluster whose slots no node it knows could tell."""


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

    async def answer(self, send: Callable[[Pipeline], Any]) -> Any:
        """The answer to one command (``send`` queues it on a pipeline), queued as any other:
        kept through an outage, in order; None if it failed and was dropped (logged)."""
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def done(result: Any) -> None:
            if not answer.done():
                answer.set_result(result)

        self.submit(Op(send=send, done=done))
        return await answer

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
            attempt = Attempt(batch)
            self._busy = True
            try:
                await loop.run_in_executor(self._executor, attempt.run, self.client)
            finally:
                self._busy = False
            for op, result in attempt.answered:
                if op.done is not None:
                    try:
                        op.done(result)
                    except Exception:  # a bug in one caller must not stop every other's Redis
                        logger.exception("The callback of a Redis operation failed")
            self._ops.extendleft(reversed(attempt.unanswered))  # tried again, in order
            if attempt.error is None:
                self._recovered()
                continue
            self._unavailable(attempt.error)
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


class Attempt:
    """One try of a batch, in the I/O thread: the operations answered (with their results) and
    those to send again (in order), and the error that stopped it (Redis unavailable), if any.
    Other errors are logged and their operations dropped: trying them again would fail the same
    way."""

    def __init__(self, batch: list[Op]):
        self.batch = batch
        self.answered: list[tuple[Op, Any]] = []
        self.unanswered: list[Op] = []
        self.error: Exception | None = None

    def run(self, client: redis.Redis) -> None:
        position = 0
        scripts_loaded = False
        try:
            while position < len(self.batch):
                end = self._segment_end(position)
                failed = self._send(client, self.batch[position:end])
                position = end
                if failed and not scripts_loaded and self.error is None:
                    # A node without the scripts (a promoted replica): load them, send again.
                    load_scripts(client)
                    scripts_loaded = True
                    self.batch[position:position] = failed
                elif failed:
                    self.unanswered.extend(failed)
                    break
        except REDIS_ERRORS as exc:
            self.error = exc
        self.unanswered.extend(self.batch[position:])

    def _segment_end(self, position: int) -> int:
        """The end of the operations sent together from ``position``: one ``run``, or the
        ``send`` operations up to the next ``run``."""
        if self.batch[position].run is not None:
            return position + 1
        end = position
        while end < len(self.batch) and self.batch[end].send is not None:
            end += 1
        return end

    def _send(self, client: redis.Redis, ops: list[Op]) -> list[Op]:
        """Send ``ops``; the operations to send again (Redis unavailable for them, or a script
        missing where they ran)."""
        if ops[0].run is not None:
            try:
                self.answered.append((ops[0], _checked(ops[0].run(client))))
            except REDIS_ERRORS:
                raise
            except Exception as exc:  # whatever it was: logged, and the I/O thread goes on
                if is_missing_script(exc):
                    return ops
                self.answered.append((ops[0], _checked(exc)))
            return []
        with client.pipeline(transaction=False) as pipe:
            for op in ops:
                op.send(pipe)  # type: ignore[misc]
            answers = pipe.execute(raise_on_error=False)
        failed = []
        for op, answer in zip(ops, answers):
            if isinstance(answer, REDIS_ERRORS):
                self.error = answer
                failed.append(op)
            elif is_missing_script(answer):
                failed.append(op)
            else:
                self.answered.append((op, _checked(answer)))
        return failed


def _checked(answer: Any) -> Any:
    if isinstance(answer, Exception):
        logger.error("A Redis operation failed and is dropped: %r", answer)
        return None
    return answer


def _run_now(client: redis.Redis, op: Op) -> None:
    result = with_scripts(client, lambda: _once(client, op))
    if op.done is not None:
        op.done(result)


def _once(client: redis.Redis, op: Op) -> Any:
    if op.run is not None:
        return op.run(client)
    assert op.send is not None
    with client.pipeline(transaction=False) as pipe:
        op.send(pipe)
        (result,) = pipe.execute()
    return result

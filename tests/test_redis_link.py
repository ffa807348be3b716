"""The link that keeps Redis off the reactor, against a Redis server of the test's own: errors
that pass (``OOM``, ``READONLY`` after a failover) pause it, operations wait in order and go
through once Redis takes writes again."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from crawler.redis.link import REDIS_ERRORS, Op, RedisLink
from tests.conftest import REDIS_URL
from tests.throwaway_redis import ThrowawayRedis

pytestmark = pytest.mark.integration


def test_oom_and_readonly_pause_the_link_which_resumes_in_order(tmp_path: Path) -> None:
    server = ThrowawayRedis(tmp_path, persistent=False)
    server.start()
    try:
        asyncio.run(_through_refusals(server.url))
    finally:
        server.stop()


async def _through_refusals(url: str) -> None:
    admin = redis.Redis.from_url(url)
    link = RedisLink(redis.Redis.from_url(url, socket_timeout=1, retry=Retry(NoBackoff(), 0)))
    link.start(retry_seconds=0.05, stats=None)
    answers: list[Any] = []

    def rpush(value: str) -> Op:
        return Op(send=lambda pipe: pipe.rpush("list", value), done=answers.append)

    for refuse, allow in (
        (lambda: admin.config_set("maxmemory", 1), lambda: admin.config_set("maxmemory", 0)),  # OOM
        (lambda: admin.replicaof("127.0.0.1", 1), lambda: admin.replicaof("NO", "ONE")),  # READONLY
    ):
        refuse()
        link.submit(rpush("a"))
        link.submit(rpush("b"))
        await asyncio.sleep(0.3)
        assert not link.available and admin.llen("list") == len(answers)  # paused: nothing written
        allow()
        assert await link.drain(5)
        assert link.available
    assert admin.lrange("list", 0, -1) == [b"a", b"b", b"a", b"b"]
    assert answers == [1, 2, 3, 4]
    link.close()
    # What still runs while the spider closes (a heartbeat, a control poll) meets an unavailable
    # Redis, which it knows how to take, rather than a shut-down thread pool.
    with pytest.raises(REDIS_ERRORS, match="closed"):
        await link.run(lambda client: client.ping())


@pytest.mark.redis
def test_a_failing_callback_is_logged_and_the_link_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    asyncio.run(_past_a_failing_callback())
    assert "The callback of a Redis operation failed" in caplog.text
    assert "ZeroDivisionError" in caplog.text


async def _past_a_failing_callback() -> None:
    link = RedisLink(redis.Redis.from_url(REDIS_URL))
    link.start(retry_seconds=0.05, stats=None)
    answers: list[Any] = []
    link.submit(Op(send=lambda pipe: pipe.ping(), done=lambda _: 1 / 0))
    link.submit(Op(send=lambda pipe: pipe.ping(), done=answers.append))
    assert await link.drain(5)
    assert answers == [True]  # the operation after it was answered too
    link.close()

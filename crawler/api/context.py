"""What the handlers share: the database, Redis (optional), sessions, rate limits, settings."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import redis.asyncio
from aiohttp import web
from scrapy.settings import BaseSettings

from crawler.api.auth import DatabaseSessions, Identity, RedisSessions, SessionStore
from crawler.api.frontier_view import FrontierView
from crawler.api.ratelimit import SlidingWindowLimiter, TieredLimits
from crawler.api.serve_config import ServeConfig
from crawler.identity import UrlNormalizer
from crawler.redis.connection import async_redis_client
from crawler.storage import StorageBackend, open_backend
from crawler.storage.controls import record_action
from crawler.storage.domains import StoredOnlyCount
from crawler.storage.values import utc_now

STORED_ONLY_RECOUNT_SECONDS = 30.0


@dataclass(slots=True)
class ApiContext:
    config: ServeConfig
    db: StorageBackend
    redis: redis.asyncio.Redis | redis.asyncio.RedisCluster | None
    frontier: FrontierView | None
    sessions: SessionStore
    limits: TieredLimits
    login_attempts: SlidingWindowLimiter
    """Per account: failed logins (a login is counted first, and uncounted if it succeeds)."""
    normalize: UrlNormalizer
    stored_only: StoredOnlyCount

    @classmethod
    async def open(cls, config: ServeConfig, settings: BaseSettings) -> ApiContext:
        db = open_backend(config.database_url)
        await db.open()
        client = frontier = None
        if config.redis_url:
            client = await async_redis_client(settings, config.redis_url)
            frontier = FrontierView(settings)
        sessions: SessionStore = (
            RedisSessions(client, f"{config.key_prefix}session:", config.session_seconds, db)
            if client is not None
            else DatabaseSessions(db, config.session_seconds)
        )
        limits = TieredLimits(config.rate_limits, config.rate_window, time.monotonic)
        login_attempts = SlidingWindowLimiter(config.login_failures, config.login_failure_window, time.monotonic)
        normalize = UrlNormalizer(settings.getlist("CRAWLER_TRACKING_PARAMS"))
        return cls(
            config,
            db,
            client,
            frontier,
            sessions,
            limits,
            login_attempts,
            normalize,
            StoredOnlyCount(STORED_ONLY_RECOUNT_SECONDS),
        )

    async def close(self) -> None:
        if self.redis is not None:
            await self.redis.aclose()
        if self.frontier is not None:
            self.frontier.close()
        await self.db.close()

    async def record(self, identity: Identity, action: str, target: str | None = None, detail: Any = None) -> None:
        """An admin action in ``admin_actions``: who, what, on what, when."""
        await record_action(
            self.db, identity.username, action, target, None if detail is None else json.dumps(detail), utc_now()
        )


CONTEXT = web.AppKey("context", ApiContext)
IDENTITY = "identity"
"""The caller's Identity, on each request."""
CLIENT = "client"
"""The caller's address, on each request (behind trusted proxies, the one they name)."""


def context(request: web.Request) -> ApiContext:
    return request.app[CONTEXT]


def identity(request: web.Request) -> Identity:
    return request[IDENTITY]


def client(request: web.Request) -> str:
    return request[CLIENT]

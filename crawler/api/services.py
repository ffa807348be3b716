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
from crawler.api.config import ServeConfig
from crawler.api.database import Database, utc_now
from crawler.api.frontier_view import FrontierView
from crawler.api.queries import StoredOnlyCount
from crawler.api.ratelimit import TieredLimits

STORED_ONLY_RECOUNT_SECONDS = 30.0
from crawler.identity import UrlNormalizer


@dataclass(slots=True)
class Services:
    config: ServeConfig
    db: Database
    redis: redis.asyncio.Redis | None
    frontier: FrontierView | None
    sessions: SessionStore
    limits: TieredLimits
    normalize: UrlNormalizer
    stored_only: StoredOnlyCount

    @classmethod
    async def open(cls, config: ServeConfig, settings: BaseSettings) -> Services:
        db = await Database.open(config.database_url)
        client = frontier = None
        if config.redis_url:
            timeout = settings.getfloat("CRAWLER_REDIS_TIMEOUT")
            client = redis.asyncio.Redis.from_url(config.redis_url, socket_timeout=timeout, socket_connect_timeout=timeout)
            frontier = FrontierView(settings)
        sessions: SessionStore = (
            RedisSessions(client, f"{config.key_prefix}session:", config.session_seconds)
            if client is not None
            else DatabaseSessions(db, config.session_seconds)
        )
        limits = TieredLimits(config.rate_limits, config.rate_window, time.monotonic)
        normalize = UrlNormalizer(settings.getlist("CRAWLER_TRACKING_PARAMS"))
        return cls(config, db, client, frontier, sessions, limits, normalize, StoredOnlyCount(STORED_ONLY_RECOUNT_SECONDS))

    async def close(self) -> None:
        if self.redis is not None:
            await self.redis.aclose()
        if self.frontier is not None:
            self.frontier.close()
        await self.db.close()

    async def record(self, identity: Identity, action: str, target: str | None = None, detail: Any = None) -> None:
        """An admin action in ``admin_actions``: who, what, on what, when."""
        await self.db.raw(
            "INSERT INTO admin_actions (username, action, target, detail, acted_at) VALUES (?, ?, ?, ?, ?)",
            (identity.username, action, target, None if detail is None else json.dumps(detail), utc_now()),
        )


SERVICES = web.AppKey("services", Services)
IDENTITY = "identity"
"""The caller's Identity, on each request."""


def services(request: web.Request) -> Services:
    return request.app[SERVICES]


def identity(request: web.Request) -> Identity:
    return request[IDENTITY]

"""``GET /health``: whether the database and Redis answer."""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from crawler.api.context import context
from crawler.api.routing import Route

logger = logging.getLogger(__name__)

CHECK_TIMEOUT = 5.0


async def _check(name: str, probe) -> str:
    """``ok`` or ``unavailable``: the answer is public, so why goes to the log only (an error's
    text names hosts and ports; and while the store holding sessions is away, no caller can be
    recognised as logged in to be told more)."""
    try:
        await asyncio.wait_for(probe, CHECK_TIMEOUT)
    except Exception as exc:  # any failure is the answer here, not an error of the API
        logger.warning("health: %s unavailable: %s: %s", name, exc.__class__.__name__, exc)
        return "unavailable"
    return "ok"


async def health(request: web.Request) -> web.Response:
    found = context(request)
    database = await _check("the database", found.db.ping())
    redis = "not configured" if found.redis is None else await _check("Redis", found.redis.ping())
    healthy = database == "ok" and redis in ("ok", "not configured")
    body = {
        "status": "ok" if healthy else "degraded",
        "database": database,
        "database_dialect": found.db.dialect,
        "redis": redis,
    }
    return web.json_response(body, status=200 if healthy else 503)


ROUTES = (Route("GET", "/health", health, "anonymous", "Database and Redis status", statuses=(503,)),)

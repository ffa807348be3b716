"""The aiohttp application: who is calling, rate limits, roles, JSON errors, and the routes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterable

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from scrapy.settings import BaseSettings

from crawler.api.auth import ANONYMOUS, COOKIE, Identity
from crawler.api.context import CONTEXT, IDENTITY, ApiContext, context
from crawler.api.openapi import describe
from crawler.api.routes import ROUTES
from crawler.api.routes.site_routes import OPENAPI
from crawler.api.routing import Handler, Route
from crawler.api.serve_config import ServeConfig
from crawler.storage import StorageUnavailable

logger = logging.getLogger(__name__)

# Files of the dashboard itself are not counted: the login page must load for anyone.
_UNCOUNTED_PREFIXES = ("/static/",)
_UNCOUNTED = frozenset({"/", "/favicon.ico"})


def error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"error": message}, status=status, headers=headers)


@web.middleware
async def caller(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Resolve the session cookie, then count the request in its tier."""
    found = context(request)
    token = request.cookies.get(COOKIE)
    who = (await found.sessions.get(token) if token and len(token) < 200 else None) or ANONYMOUS
    request[IDENTITY] = who
    if request.path in _UNCOUNTED or request.path.startswith(_UNCOUNTED_PREFIXES):
        return await handler(request)
    key = who.username or (request.remote or "unknown")
    decision = found.limits.hit(who.role, key)
    if not decision.allowed:
        return error(429, f"rate limit of the {who.role} tier reached", {"Retry-After": str(decision.retry_after)})
    return await handler(request)


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every error answers JSON; a database or Redis away is a 503, not a traceback."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.content_type == "application/json" or exc.status < 400:
            raise
        return error(exc.status, exc.reason, {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None)
    except (StorageUnavailable, OSError) as exc:
        logger.warning("%s %s: %s", request.method, request.path, exc)
        return error(503, f"storage or Redis unavailable: {exc}")


def guarded(route: Route) -> Handler:
    """The route's handler behind its role check and its extra rate-limit tier."""

    async def handler(request: web.Request) -> web.StreamResponse:
        who: Identity = request[IDENTITY]
        if not who.may(route.role):
            return (
                error(401, "authentication required")
                if who is ANONYMOUS
                else error(403, f"the {who.role} role may not do this")
            )
        if route.tier is not None:
            decision = context(request).limits.hit(route.tier, who.username)
            if not decision.allowed:
                return error(
                    429, f"rate limit of the {route.tier} tier reached", {"Retry-After": str(decision.retry_after)}
                )
        return await route.handler(request)

    return handler


class MalformedRequestsInOneLine(logging.Filter):
    """A request that is not valid HTTP is answered 400 by aiohttp, which logs it as an error
    with a traceback; it is the client's fault, so one line without the traceback says it."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, HttpProcessingError):
            record.msg, record.args = f"{record.getMessage()}: answered 400: {error.message.strip()}", ()
            record.exc_info, record.exc_text, record.levelno, record.levelname = None, None, logging.INFO, "INFO"
        return True


_MALFORMED_IN_ONE_LINE = MalformedRequestsInOneLine()


def build_app(config: ServeConfig, settings: BaseSettings, routes: Iterable[Route] = ROUTES) -> web.Application:
    logging.getLogger("aiohttp.server").addFilter(_MALFORMED_IN_ONE_LINE)  # once, however many apps
    app = web.Application(middlewares=[json_errors, caller], client_max_size=1024 * 1024)
    routes = tuple(routes)
    for route in routes:
        app.router.add_route(route.method, route.path, guarded(route))
    app[OPENAPI] = describe(routes)

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        found = app[CONTEXT] = await ApiContext.open(config, settings)
        sweeper = asyncio.create_task(_forget_idle(found, config.rate_window))
        yield
        sweeper.cancel()
        await found.close()

    app.cleanup_ctx.append(lifecycle)
    return app


async def _forget_idle(found: ApiContext, every: float) -> None:
    while True:
        await asyncio.sleep(every)
        found.limits.forget_idle()

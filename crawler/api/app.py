"""The aiohttp application: who is calling, rate limits, same-origin state changes, roles, JSON
errors, security headers, and the routes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterable

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from redis.exceptions import RedisError
from scrapy.settings import BaseSettings

from crawler.api import csrf, params
from crawler.api.auth import ANONYMOUS, COOKIE, SCRAPER, Identity, bearer_matches
from crawler.api.context import CLIENT, CONTEXT, IDENTITY, ApiContext, client, context
from crawler.api.openapi import describe
from crawler.api.routes import ROUTES
from crawler.api.routes.auth_routes import LOGIN_PATH
from crawler.api.routes.metrics_routes import METRICS_PATH
from crawler.api.routes.site_routes import OPENAPI
from crawler.api.routing import Handler, Route
from crawler.api.security_headers import add_security_headers
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
    """Find the client's address and resolve the session cookie, then count the request in its tier."""
    found = context(request)
    address = found.config.trusted_proxies.client(request.remote, request.headers.getall("X-Forwarded-For", ()))
    request[CLIENT] = address
    if request.path == METRICS_PATH and bearer_matches(
        request.headers.get("Authorization"), found.config.metrics_token
    ):
        request[IDENTITY] = SCRAPER
        return await handler(request)
    token = request.cookies.get(COOKIE)
    who = (await found.sessions.get(token) if token and len(token) < 200 else None) or ANONYMOUS
    request[IDENTITY] = who
    if request.path in _UNCOUNTED or request.path.startswith(_UNCOUNTED_PREFIXES):
        return await handler(request)
    # Logging in counts by address in the anonymous tier whatever session comes with it: a
    # session must not buy a larger budget for guessing other users' passwords.
    tier, key = ("anonymous", address) if request.path == LOGIN_PATH else (who.role, who.username or address)
    decision = found.limits.hit(tier, key)
    if not decision.allowed:
        return error(429, f"rate limit of the {tier} tier reached", {"Retry-After": str(decision.retry_after)})
    return await handler(request)


@web.middleware
async def same_origin(request: web.Request, handler: Handler) -> web.StreamResponse:
    """State changes come from this server's own pages (or from programs), with JSON or no body."""
    if request.method not in csrf.STATE_CHANGING:
        return await handler(request)
    proxies, peer = context(request).config.trusted_proxies, request.remote
    scheme = proxies.forwarded(peer, request.headers.getall("X-Forwarded-Proto", ())) or request.scheme
    host = proxies.forwarded(peer, request.headers.getall("X-Forwarded-Host", ())) or request.host
    refusal = csrf.cross_site(
        request.headers.get("Sec-Fetch-Site"), request.headers.get("Origin"), csrf.origin(scheme, host)
    )
    if refusal is not None:
        logger.warning("%s %s from %s %s", request.method, request.path, client(request), refusal)
        return error(403, refusal)
    refusal = csrf.unsafe_body(request.headers.get("Content-Type"), request.body_exists)
    if refusal is not None:
        return error(415, refusal)
    return await handler(request)


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every error answers JSON; a database or Redis away is a 503, not a traceback, and names
    no server (the log line does)."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.content_type == "application/json" or exc.status < 400:
            raise
        return error(exc.status, exc.reason, {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None)
    except (StorageUnavailable, OSError, RedisError) as exc:
        logger.warning("%s %s: %s: %s", request.method, request.path, exc.__class__.__name__, exc)
        return error(503, "the database or Redis is unavailable")
    except Exception:
        logger.exception("%s %s failed", request.method, request.path)  # a flaw of the server: its traceback
        return error(500, "internal error")


def guarded(route: Route) -> Handler:
    """The route's handler behind its role check, its path parameters' bounds and its extra rate-limit tier."""

    async def handler(request: web.Request) -> web.StreamResponse:
        who: Identity = request[IDENTITY]
        if not who.may(route.role):
            return (
                error(401, "authentication required")
                if who is ANONYMOUS
                else error(403, f"the {who.role} role may not do this")
            )
        params.check_path(request, route.parameters)
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
    app = web.Application(middlewares=[json_errors, caller, same_origin], client_max_size=1024 * 1024)
    app.on_response_prepare.append(add_security_headers)
    routes = tuple(routes)
    for route in routes:
        if route.method == "GET":
            app.router.add_get(route.path, guarded(route), allow_head=True)
        else:
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
        found.login_attempts.forget_idle()

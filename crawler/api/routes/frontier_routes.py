"""The frontier: its size, its URLs, URLs added through the inbox, stale work recovered, clearing."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

from aiohttp import web

from crawler.api import params
from crawler.api.context import ApiContext, context, identity
from crawler.api.overview import domains_and_frontier
from crawler.api.routing import URLS_BODY, Param, Route
from crawler.identity import InvalidURL
from crawler.storage.inbox import add_to_inbox, clear_inbox, recover_inbox, waiting_urls
from crawler.storage.spilled_requests import forget_crawl, spilled_urls
from crawler.storage.values import utc_now

LIMIT = Param("limit", {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100})
CRAWL = Param(
    "crawl",
    {"type": "string", "minLength": 1, "maxLength": 200},
    "one shared crawl (Redis only); all of them without it",
)


async def frontier_stats(request: web.Request) -> web.Response:
    _, frontier = await domains_and_frontier(context(request), utc_now())
    return web.json_response(frontier)


async def frontier_urls(request: web.Request) -> web.Response:
    """With Redis, the URLs queued in the shared frontiers, then those their cold domains spilled
    to the database (``"spilled": true``), paged by offset; without, the URLs seeded and not yet
    taken, then the rows of URLs a job left unfetched (paged by offset too: these lists are what
    an operator looks at, not what a program walks)."""
    found = context(request)
    limit = params.integer(request, "limit", 100, 1, 1000)
    offset = params.integer(request, "offset", 0, 0, 10_000_000)
    if found.frontier is not None:
        crawl = params.text(request, "crawl", 200)
        urls, more, past_queued = await asyncio.to_thread(found.frontier.urls, offset, limit, crawl)
        if not more:
            spilled = await spilled_urls(found.db, crawl, limit - len(urls) + 1, past_queued)
            more = len(urls) + len(spilled) > limit
            urls = [*urls, *spilled][:limit]
        return web.json_response({"source": "redis", "urls": urls, "next_offset": offset + limit if more else None})
    rows = await waiting_urls(found.db, limit + 1, offset)
    more = len(rows) > limit
    return web.json_response(
        {"source": "database", "urls": rows[:limit], "next_offset": offset + limit if more else None}
    )


async def _inbox(request: web.Request, action: str) -> web.Response:
    found = context(request)
    who = identity(request)
    data = await params.body(request)
    urls = params.url_list(data)
    spider = params.optional_string_field(data, "spider", 64)
    crawl = params.optional_string_field(data, "crawl", 255)
    accepted, rejected = _validated(found, urls)
    if not accepted:
        raise params.bad_request(f"no valid URL: {rejected[0]['url']!r}: {rejected[0]['error']}")
    now = utc_now()
    for url in accepted:
        await add_to_inbox(found.db, url, spider, crawl, who.username, now)
    await found.record(
        who, action, None, {"urls": accepted, "rejected": len(rejected), "spider": spider, "crawl": crawl}
    )
    return web.json_response({"accepted": accepted, "rejected": rejected}, status=202)


def _validated(found: ApiContext, urls: list[str]) -> tuple[list[str], list[dict[str, str]]]:
    accepted, rejected = [], []
    for url in urls:
        try:
            normal = found.normalize(url.strip())
        except InvalidURL as exc:
            rejected.append({"url": url[:2048], "error": str(exc)})
            continue
        if normal not in accepted:
            accepted.append(normal)
    return accepted, rejected


async def frontier_add(request: web.Request) -> web.Response:
    return await _inbox(request, "frontier.add")


async def frontier_seed(request: web.Request) -> web.Response:
    return await _inbox(request, "frontier.seed")


async def frontier_recover(request: web.Request) -> web.Response:
    """URLs a crawl process took from the inbox and died with (no heartbeat for the timeout,
    no row yet) go back to the inbox; with Redis, the expired leases are counted (the shared
    frontier hands them out again on its next pop)."""
    found = context(request)
    returned = await recover_inbox(found.db, utc_now() - timedelta(seconds=found.config.heartbeat_timeout))
    expired = await asyncio.to_thread(found.frontier.expired_leases, time.time()) if found.frontier else 0
    result = {"inbox_returned": returned, "expired_leases": expired}
    await found.record(identity(request), "frontier.recover", None, result)
    return web.json_response(result)


async def frontier_clear(request: web.Request) -> web.Response:
    """URLs waiting in the inbox are dropped; with ``crawl``, that shared crawl's keys and the
    requests it spilled to the database too."""
    found = context(request)
    crawl = params.text(request, "crawl", 200)
    result: dict[str, Any] = {
        "inbox_dropped": await clear_inbox(found.db),
        "redis_keys_deleted": 0,
        "spilled_dropped": 0,
    }
    if crawl is not None:
        if found.frontier is None:
            raise params.bad_request("crawl names a shared crawl, and REDIS_URL is not set")
        if crawl not in await asyncio.to_thread(found.frontier.crawls):
            raise params.not_found(f"no shared crawl {crawl!r} in this Redis")
        result["redis_keys_deleted"] = await asyncio.to_thread(lambda: found.frontier.frontier(crawl).clear())
        result["spilled_dropped"] = await forget_crawl(found.db, crawl)
    await found.record(identity(request), "frontier.clear", crawl, result)
    return web.json_response(result)


ROUTES = (
    Route(
        "GET",
        "/api/frontier/stats",
        frontier_stats,
        "user",
        "Frontier size and age (Redis, else what the database holds)",
    ),
    Route(
        "GET",
        "/api/frontier/urls",
        frontier_urls,
        "user",
        "URLs waiting in the frontier",
        (LIMIT, Param("offset", {"type": "integer", "minimum": 0, "maximum": 10_000_000, "default": 0}), CRAWL),
    ),
    Route(
        "POST",
        "/api/frontier/add",
        frontier_add,
        "admin",
        "Add URLs (the crawl processes take them from the inbox)",
        body=URLS_BODY,
        statuses=(202, 400),
    ),
    Route(
        "POST",
        "/api/frontier/seed",
        frontier_seed,
        "admin",
        "Add seed URLs",
        body=URLS_BODY,
        tier="seed",
        statuses=(202, 400),
    ),
    Route("POST", "/api/frontier/recover", frontier_recover, "admin", "Recover URLs taken by processes that died"),
    Route(
        "DELETE",
        "/api/frontier",
        frontier_clear,
        "admin",
        "Clear the frontier",
        (Param("crawl", CRAWL.schema, "a shared crawl whose keys are deleted"),),
        statuses=(400, 404),
    ),
)

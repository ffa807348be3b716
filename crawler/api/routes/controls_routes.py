"""Steering a crawl (admins): per-domain limits, pause and resume (a domain, or ``*`` for the
whole crawl), a domain's reset, purging pages, and the record of these actions. Crawl
processes read ``domain_controls`` every few seconds and apply it."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from crawler.api import params
from crawler.api.context import ApiContext, context, identity
from crawler.api.routing import DOMAIN, Param, Route
from crawler.storage.controls import admin_actions, set_control
from crawler.storage.pages import purge_pages as delete_pages
from crawler.storage.values import utc_now

LIMITS_BODY = {
    "type": "object",
    "properties": {
        "max_concurrency": {"type": ["integer", "null"], "minimum": 1, "maximum": 1000},
        "min_delay": {"type": ["number", "null"], "minimum": 0, "maximum": 3600},
    },
}


async def _control(found: ApiContext, domain: str, who: str, **values: Any) -> dict[str, Any]:
    """Upsert the domain's control row with ``values``; the other columns keep theirs."""
    row = await set_control(found.db, domain, who, utc_now(), **values)
    row["paused"] = bool(row["paused"])
    return row


def _number(data: dict[str, Any], name: str, kind: type, low: float, high: float) -> Any:
    value = data.get(name)
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (kind is int and not isinstance(value, int))
        or not low <= value <= high
    ):
        raise params.bad_request(
            f"{name} must be {'an integer' if kind is int else 'a number'} from {low} to {high}, or null"
        )
    return kind(value)


async def put_limits(request: web.Request) -> web.Response:
    found, who, domain = context(request), identity(request), request.match_info["domain"]
    data = await params.body(request)
    limits = {
        "max_concurrency": _number(data, "max_concurrency", int, 1, 1000),
        "min_delay": _number(data, "min_delay", float, 0, 3600),
    }
    row = await _control(found, domain, who.username, **limits)
    await found.record(who, "domain.limits", domain, limits)
    return web.json_response(row)


async def delete_limits(request: web.Request) -> web.Response:
    found, who, domain = context(request), identity(request), request.match_info["domain"]
    row = await _control(found, domain, who.username, max_concurrency=None, min_delay=None)
    await found.record(who, "domain.limits_cleared", domain)
    return web.json_response(row)


async def pause(request: web.Request) -> web.Response:
    return await _pause(request, True)


async def resume(request: web.Request) -> web.Response:
    return await _pause(request, False)


async def _pause(request: web.Request, paused: bool) -> web.Response:
    found, who, domain = context(request), identity(request), request.match_info["domain"]
    row = await _control(found, domain, who.username, paused=paused)
    await found.record(who, "domain.pause" if paused else "domain.resume", domain)
    return web.json_response(row)


async def reset(request: web.Request) -> web.Response:
    """The crawl processes clear the domain's learned delay, floor, block and circuit."""
    found, who, domain = context(request), identity(request), request.match_info["domain"]
    row = await _control(found, domain, who.username, reset_requested_at=utc_now())
    await found.record(who, "domain.reset", domain)
    return web.json_response(row)


async def purge_pages(request: web.Request) -> web.Response:
    """Delete stored pages: of one domain, crawled before a time, or (``all=true``) every one."""
    found, who = context(request), identity(request)
    domain = params.text(request, "domain", 255)
    before = params.timestamp(request, "before")
    everything = params.choice(request, "all", "false", ("true", "false")) == "true"
    if domain is None and before is None and not everything:
        raise params.bad_request("say which pages: domain, before, or all=true")
    count = await delete_pages(found.db, domain, before)
    detail = {"domain": domain, "before": before.isoformat() if before else None, "deleted": count}
    await found.record(who, "pages.purge", domain, detail)
    return web.json_response({"deleted": count})


async def actions(request: web.Request) -> web.Response:
    limit = params.integer(request, "limit", 100, 1, 1000)
    return web.json_response({"actions": await admin_actions(context(request).db, limit)})


ROUTES = (
    Route(
        "PUT",
        "/api/domains/{domain}/limits",
        put_limits,
        "admin",
        "Set a domain's concurrency and minimum delay (robots.txt and learned delays still win when stricter)",
        (DOMAIN,),
        body=LIMITS_BODY,
        statuses=(400,),
    ),
    Route(
        "DELETE",
        "/api/domains/{domain}/limits",
        delete_limits,
        "admin",
        "Clear a domain's limits",
        (DOMAIN,),
        statuses=(400,),
    ),
    Route(
        "POST",
        "/api/domains/{domain}/pause",
        pause,
        "admin",
        "Pause a domain (* for the whole crawl)",
        (DOMAIN,),
        statuses=(400,),
    ),
    Route(
        "POST",
        "/api/domains/{domain}/resume",
        resume,
        "admin",
        "Resume a domain (* for the whole crawl)",
        (DOMAIN,),
        statuses=(400,),
    ),
    Route(
        "POST",
        "/api/admin/domains/{domain}/reset",
        reset,
        "admin",
        "Reset a domain's learned delay, floor, block and circuit",
        (DOMAIN,),
        statuses=(400,),
    ),
    Route(
        "DELETE",
        "/api/admin/pages",
        purge_pages,
        "admin",
        "Purge stored pages",
        (
            Param("domain", {"type": "string", "minLength": 1, "maxLength": 255}),
            Param("before", {"type": "string"}, "ISO 8601 or epoch seconds"),
            Param("all", {"type": "string", "enum": ["true", "false"]}, "every page"),
        ),
        statuses=(400,),
    ),
    Route(
        "GET",
        "/api/admin/actions",
        actions,
        "admin",
        "Recorded admin actions, newest first",
        (Param("limit", {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}),),
    ),
)

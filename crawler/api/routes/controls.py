"""Steering a crawl (admins): per-domain limits, pause and resume (a domain, or ``*`` for the
whole crawl), a domain's reset, purging pages, and the record of these actions. Crawl
processes read ``domain_controls`` every few seconds and apply it."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from crawler.api import params, queries
from crawler.api.database import utc_now
from crawler.api.routing import DOMAIN, Param, Route
from crawler.api.services import Services, identity, services

LIMITS_BODY = {
    "type": "object",
    "properties": {
        "max_concurrency": {"type": ["integer", "null"], "minimum": 1, "maximum": 1000},
        "min_delay": {"type": ["number", "null"], "minimum": 0, "maximum": 3600},
    },
}


async def _control(found: Services, domain: str, who: str, **values: Any) -> dict[str, Any]:
    """Upsert the domain's control row with ``values``; the other columns keep theirs."""
    if not domain or len(domain) > 255:
        raise params.bad_request("domain must be 1 to 255 characters")
    columns = list(values)
    now = utc_now()
    inserted = {"paused": False, **values}
    names = [*inserted, "updated_by", "updated_at"]
    updates = ", ".join(f"{c} = excluded.{c}" for c in [*columns, "updated_by", "updated_at"])
    await found.db.raw(
        f"INSERT INTO domain_controls (domain, {', '.join(names)}) VALUES (?, {', '.join('?' * len(names))}) "
        f"ON CONFLICT (domain) DO UPDATE SET {updates}",
        (domain, *inserted.values(), who, now),
    )
    rows = await found.db.rows(f"SELECT {', '.join(queries.CONTROL_COLUMNS)} FROM domain_controls WHERE domain = ?", queries.CONTROL_COLUMNS, (domain,))
    rows[0]["paused"] = bool(rows[0]["paused"])
    return rows[0]


def _number(data: dict[str, Any], name: str, kind: type, low: float, high: float) -> Any:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or (kind is int and not isinstance(value, int)) or not low <= value <= high:
        raise params.bad_request(f"{name} must be {'an integer' if kind is int else 'a number'} from {low} to {high}, or null")
    return kind(value)


async def put_limits(request: web.Request) -> web.Response:
    found, who, domain = services(request), identity(request), request.match_info["domain"]
    data = await params.body(request)
    limits = {"max_concurrency": _number(data, "max_concurrency", int, 1, 1000), "min_delay": _number(data, "min_delay", float, 0, 3600)}
    row = await _control(found, domain, who.username, **limits)
    await found.record(who, "domain.limits", domain, limits)
    return web.json_response(row)


async def delete_limits(request: web.Request) -> web.Response:
    found, who, domain = services(request), identity(request), request.match_info["domain"]
    row = await _control(found, domain, who.username, max_concurrency=None, min_delay=None)
    await found.record(who, "domain.limits_cleared", domain)
    return web.json_response(row)


async def pause(request: web.Request) -> web.Response:
    return await _pause(request, True)


async def resume(request: web.Request) -> web.Response:
    return await _pause(request, False)


async def _pause(request: web.Request, paused: bool) -> web.Response:
    found, who, domain = services(request), identity(request), request.match_info["domain"]
    row = await _control(found, domain, who.username, paused=paused)
    await found.record(who, "domain.pause" if paused else "domain.resume", domain)
    return web.json_response(row)


async def reset(request: web.Request) -> web.Response:
    """The crawl processes clear the domain's learned delay, floor, block and circuit."""
    found, who, domain = services(request), identity(request), request.match_info["domain"]
    row = await _control(found, domain, who.username, reset_requested_at=utc_now())
    await found.record(who, "domain.reset", domain)
    return web.json_response(row)


async def purge_pages(request: web.Request) -> web.Response:
    """Delete stored pages: of one domain, crawled before a time, or (``all=true``) every one."""
    found, who = services(request), identity(request)
    domain = params.text(request, "domain", 255)
    before = params.timestamp(request, "before")
    everything = params.choice(request, "all", "false", ("true", "false")) == "true"
    conditions, values = queries.page_filters(domain=domain, until=before)
    if not conditions and not everything:
        raise params.bad_request("say which pages: domain, before, or all=true")
    where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
    count = int(await found.db.scalar(f"SELECT COUNT(*) FROM pages {where}", values) or 0)
    await found.db.raw(f"DELETE FROM pages {where}", values)
    detail = {"domain": domain, "before": before.isoformat() if before else None, "deleted": count}
    await found.record(who, "pages.purge", domain, detail)
    return web.json_response({"deleted": count})


async def actions(request: web.Request) -> web.Response:
    limit = params.integer(request, "limit", 100, 1, 1000)
    columns = ("id", "username", "action", "target", "detail", "acted_at")
    rows = await services(request).db.rows(f"SELECT {', '.join(columns)} FROM admin_actions ORDER BY id DESC LIMIT ?", columns, (limit,))
    return web.json_response({"actions": rows})


ROUTES = (
    Route("PUT", "/api/domains/{domain}/limits", put_limits, "admin", "Set a domain's concurrency and minimum delay (robots.txt and learned delays still win when stricter)",
          (DOMAIN,), body=LIMITS_BODY, statuses=(400,)),
    Route("DELETE", "/api/domains/{domain}/limits", delete_limits, "admin", "Clear a domain's limits", (DOMAIN,), statuses=(400,)),
    Route("POST", "/api/domains/{domain}/pause", pause, "admin", "Pause a domain (* for the whole crawl)", (DOMAIN,), statuses=(400,)),
    Route("POST", "/api/domains/{domain}/resume", resume, "admin", "Resume a domain (* for the whole crawl)", (DOMAIN,), statuses=(400,)),
    Route("POST", "/api/admin/domains/{domain}/reset", reset, "admin", "Reset a domain's learned delay, floor, block and circuit", (DOMAIN,), statuses=(400,)),
    Route("DELETE", "/api/admin/pages", purge_pages, "admin", "Purge stored pages",
          (Param("domain", {"type": "string", "minLength": 1, "maxLength": 255}),
           Param("before", {"type": "string"}, "ISO 8601 or epoch seconds"),
           Param("all", {"type": "string", "enum": ["true", "false"]}, "every page")),
          statuses=(400,)),
    Route("GET", "/api/admin/actions", actions, "admin", "Recorded admin actions, newest first",
          (Param("limit", {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}),)),
)  # fmt: skip

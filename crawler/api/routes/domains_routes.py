"""Per-domain state (``/api/domains``), a domain's robots.txt, and its politeness audit."""

from __future__ import annotations

from datetime import timedelta

from aiohttp import web

from crawler.api import params
from crawler.api.context import context
from crawler.api.routing import DOMAIN, Param, Route
from crawler.control.site_audit import summarize
from crawler.storage.domains import DOMAIN_SORTS, domains_page, robots_file
from crawler.storage.observations import logged_requests, recent_denials, robots_decisions
from crawler.storage.values import unix_time, utc_now


async def domains(request: web.Request) -> web.Response:
    sort = params.choice(request, "sort", "domain", list(DOMAIN_SORTS))
    order = params.choice(request, "order", "asc" if sort == "domain" else "desc", ("asc", "desc"))
    limit = params.integer(request, "limit", 100, 1, 1000)
    offset = params.integer(request, "offset", 0, 0, 10_000_000)
    found = context(request)
    total, rows = await domains_page(
        found.db, sort, order == "desc", limit, offset, params.text(request, "q", 255), found.stored_only
    )
    now = utc_now().timestamp()
    for row in rows:
        until = unix_time(row["blocked_until"])
        row["blocked_for"] = round(until - now, 3) if until and until > now else 0.0
        row["paused"] = bool(row["paused"])
    return web.json_response({"total": total, "domains": rows})


async def robots(request: web.Request) -> web.Response:
    domain = request.match_info["domain"]
    db = context(request).db
    stored = await robots_file(db, domain)
    if stored is None:
        raise params.not_found(f"no robots.txt stored for {domain}")
    decisions = await recent_denials(db, domain, 20)
    return web.json_response({**stored, "is_allowed": bool(stored["is_allowed"]), "recent_denials": decisions})


async def audit(request: web.Request) -> web.Response:
    """What the crawler did to a domain over a window, from ``request_log`` and
    ``robots_decisions``, summarised by the same function as ``scrapy audit``."""
    domain = request.match_info["domain"]
    minutes = params.integer(request, "minutes", 60, 1, 7 * 24 * 60)
    tolerance = params.integer(request, "tolerance_ms", 10, 0, 10_000) / 1000
    since = utc_now() - timedelta(minutes=minutes)
    db = context(request).db
    rows, decisions = await logged_requests(db, domain, since), await robots_decisions(db, domain, since)
    return web.json_response({"domain": domain, "minutes": minutes, "summary": summarize(rows, tolerance, decisions)})


ROUTES = (
    Route(
        "GET",
        "/api/domains",
        domains,
        "user",
        "Per domain: delays, block, circuit, in flight, queued, pages, errors, 429s (domains with "
        "a crawl snapshot in the order asked, then those known only from stored robots.txt, by name)",
        (
            Param("sort", {"type": "string", "enum": list(DOMAIN_SORTS), "default": "domain"}),
            Param("order", {"type": "string", "enum": ["asc", "desc"]}),
            Param("limit", {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}),
            Param("offset", {"type": "integer", "minimum": 0, "maximum": 10_000_000, "default": 0}),
            Param("q", {"type": "string", "minLength": 1, "maxLength": 255}, "part of the domain name"),
        ),
        statuses=(400,),
    ),
    Route(
        "GET",
        "/api/domains/{domain}/robots",
        robots,
        "user",
        "The stored robots.txt and recent denials",
        (DOMAIN,),
        statuses=(404,),
    ),
    Route(
        "GET",
        "/api/domains/{domain}/audit",
        audit,
        "user",
        "Politeness audit of a domain over a window",
        (
            DOMAIN,
            Param("minutes", {"type": "integer", "minimum": 1, "maximum": 10080, "default": 60}),
            Param("tolerance_ms", {"type": "integer", "minimum": 0, "maximum": 10000, "default": 10}),
        ),
        statuses=(400,),
    ),
)

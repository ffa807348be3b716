"""``GET /api/pages``: stored rows, newest first, filtered by domain, status and time, in keyset pages."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime

from aiohttp import web

from crawler.api import params
from crawler.api.context import context
from crawler.api.routing import Param, Route
from crawler.storage.pages import newest_pages

STATUSES = (
    "fetched",
    "noindex",
    "duplicate",
    "sitemap",
    "redirect",
    "blocked_by_robots",
    "filtered",
    "skipped",
    "error",
)


def _cursor(request: web.Request) -> tuple[datetime, int] | None:
    raw = params.text(request, "cursor", 100)
    if raw is None:
        return None
    try:
        moment, _, row_id = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode().rpartition("~")
        return params.timestamp_value(moment), int(row_id)
    except (ValueError, binascii.Error):
        raise params.bad_request("cursor must be the next_cursor of a previous page") from None


async def pages(request: web.Request) -> web.Response:
    limit = params.integer(request, "limit", 100, 1, 1000)
    status = request.query.get("status")
    if status is not None:
        params.choice(request, "status", status, STATUSES)
    rows = await newest_pages(
        context(request).db,
        limit=limit + 1,
        after=_cursor(request),
        domain=params.text(request, "domain", 255),
        status=status,
        since=params.timestamp(request, "since"),
        until=params.timestamp(request, "until"),
    )
    more = len(rows) > limit
    rows = rows[:limit]
    # Opaque and URL-safe: the last row's time and id.
    cursor = (
        base64.urlsafe_b64encode(f"{rows[-1]['crawled_at']}~{rows[-1]['id']}".encode()).decode().rstrip("=")
        if more
        else None
    )
    return web.json_response({"pages": rows, "next_cursor": cursor})


ROUTES = (
    Route(
        "GET",
        "/api/pages",
        pages,
        "user",
        "Stored pages, newest first",
        (
            Param("domain", {"type": "string", "minLength": 1, "maxLength": 255}),
            Param("status", {"type": "string", "enum": list(STATUSES)}),
            Param("since", {"type": "string"}, "ISO 8601 or epoch seconds: crawled at or after"),
            Param("until", {"type": "string"}, "ISO 8601 or epoch seconds: crawled before"),
            Param("limit", {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}),
            Param("cursor", {"type": "string", "maxLength": 100}, "next_cursor of the previous page"),
        ),
        statuses=(400,),
    ),
)

"""``/api/stats`` (the crawl at a glance, with alerts) and ``/api/stats/timeseries`` (charts)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from aiohttp import web

from crawler.api import figures, params
from crawler.api.context import context
from crawler.api.overview import gather, mark_liveness, point_json, recent_samples, stopped
from crawler.api.routing import Param, Route
from crawler.storage.observations import workers
from crawler.storage.values import utc_now

MAX_POINTS = 1000
TOTALS = {
    "pages_fetched": figures.PAGES,
    "items_scraped": "item_scraped_count",
    "retries": "retry/count",
    "robots_denials": "robots/forbidden",
    "responses_429": figures.STATUS_PREFIX + "429",
    "storage_pending_rows": "storage/pending_rows",
    "lease_reclaims": "frontier/lease_reclaimed",
}


async def stats(request: web.Request) -> web.Response:
    view = await gather(context(request))
    body = {
        "generated_at": view.now,
        "pages_per_second": round(view.pages_per_second, 3),
        "success_rate": view.success_rate,
        "totals": {name: view.totals.get(key, 0.0) for name, key in TOTALS.items()},
        "statuses": figures.statuses(view.totals),
        "active_workers": len(view.live_workers),
        "workers": [{k: v for k, v in w.items() if k != "stats"} for w in view.workers],
        "frontier": view.frontier,
        "domains": view.domains,
        "crawl_paused": view.paused,
        "alerts": [{"name": a.name, "message": a.message} for a in view.alerts],
    }
    return web.json_response(body)


async def timeseries(request: web.Request) -> web.Response:
    minutes = params.integer(request, "minutes", 15, 1, 24 * 60)
    step = params.integer(request, "step", 10, 5, 3600)
    if minutes * 60 // step > MAX_POINTS:
        raise params.bad_request(f"at most {MAX_POINTS} points: a larger step, or fewer minutes")
    found = context(request)
    moment = utc_now()
    processes, samples = await asyncio.gather(
        workers(found.db), recent_samples(found, moment - timedelta(minutes=minutes, seconds=step))
    )
    mark_liveness(processes, moment.timestamp(), found.config.heartbeat_timeout)
    chart = figures.chart(samples, moment.timestamp(), minutes * 60, step, stopped(processes))
    return web.json_response(
        {
            "step": step,
            "points": [point_json(p) for p in chart.points],
            "scale": {"pages_per_second": chart.pages_per_second_scale, "responses": chart.responses_scale},
        }
    )


ROUTES = (
    Route(
        "GET",
        "/api/stats",
        stats,
        "anonymous",
        "The crawl at a glance: rates, totals, workers, frontier, domains, alerts",
    ),
    Route(
        "GET",
        "/api/stats/timeseries",
        timeseries,
        "user",
        "Pages per second, status mix and frontier size over time, in intervals aligned on the step, "
        "with the charts' scales",
        (
            Param("minutes", {"type": "integer", "minimum": 1, "maximum": 1440, "default": 15}, "how far back"),
            Param("step", {"type": "integer", "minimum": 5, "maximum": 3600, "default": 10}, "seconds per point"),
        ),
    ),
)

"""``/api/stats`` (the crawl at a glance, with alerts, and the run of the crawl shown) and
``/api/stats/timeseries`` (charts)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from aiohttp import web

from crawler.api import figures, params
from crawler.api.context import context, identity
from crawler.api.overview import gather, mark_liveness, point_json, recent_samples, run_or_404, run_samples, stopped
from crawler.api.routing import Param, Route
from crawler.api.runs import CrawlRun, latest_runs
from crawler.storage.observations import workers
from crawler.storage.values import utc_now

MAX_POINTS = 1000
FINISHED_WORKERS_LISTED = 20
CRAWLS_LISTED = 20
CRAWL = Param(
    "crawl",
    {"type": "string", "minLength": 1, "maxLength": 255},
    "a crawl id: the figures of its latest run (/api/stats: by default, of the crawl running)",
)
TOTALS = {
    "pages_fetched": figures.PAGES,
    "items_scraped": "item_scraped_count",
    "retries": "retry/count",
    "robots_denials": "robots/forbidden",
    "responses_429": figures.STATUS_PREFIX + "429",
    "storage_pending_rows": "storage/pending_rows",
    "lease_reclaims": "frontier/lease_reclaimed",
}
PROCESS_NAMES = frozenset({"worker_id", "job_id", "hostname", "pid"})
"""What names a machine, a process or a job: told to logged-in callers only (anonymous callers
get the crawl's figures, states and times)."""


async def stats(request: web.Request) -> web.Response:
    view = await gather(context(request), params.text(request, "crawl", 255))
    named = identity(request).may("user")
    live, finished = [], []
    for worker in view.workers:  # the latest heartbeat first
        (live if worker["state"] in figures.LIVE_STATES else finished).append(worker)
    hidden = {"stats"} | (set() if named else PROCESS_NAMES)
    body = {
        "generated_at": view.now,
        "pages_per_second": round(view.pages_per_second, 3),
        "success_rate": view.success_rate,
        "totals": {name: view.totals.get(key, 0.0) for name, key in TOTALS.items()},
        "statuses": figures.statuses(view.totals),
        "active_workers": len(view.live_workers),
        "workers": [{k: v for k, v in w.items() if k not in hidden} for w in live + finished[:FINISHED_WORKERS_LISTED]],
        "finished_workers": len(finished),
        "crawl": None if view.run is None else run_json(view.run, view.run_per_minute, named),
        "crawls": [_summary(run, named) for run in view.runs[:CRAWLS_LISTED]],
        "frontier": view.frontier,
        "domains": view.domains,
        "crawl_paused": view.paused,
        "alerts": [{"name": a.name, "message": a.told(named)} for a in view.alerts],
    }
    return web.json_response(body)


def _summary(run: CrawlRun, named: bool) -> dict[str, Any]:
    summary = run.summary()
    if not named:
        del summary["jobs"]
    return summary


def run_json(run: CrawlRun, per_minute: list[figures.Point], named: bool) -> dict[str, Any]:
    """A run's summary with its own figures: pages from its processes' latest heartbeats, the
    rate of the last minute, the success of the last five."""
    return {
        **_summary(run, named),
        "pages_fetched": run.total(figures.PAGES),
        "pages_per_second": round(per_minute[-1].pages_per_second, 3) if per_minute else 0.0,
        "success_rate": figures.success_rate(per_minute),
    }


async def timeseries(request: web.Request) -> web.Response:
    minutes = params.integer(request, "minutes", 15, 1, 24 * 60)
    step = params.integer(request, "step", 10, 5, 3600)
    if minutes * 60 // step > MAX_POINTS:
        raise params.bad_request(f"at most {MAX_POINTS} points: a larger step, or fewer minutes")
    found, crawl = context(request), params.text(request, "crawl", 255)
    moment = utc_now()
    processes, samples = await asyncio.gather(
        workers(found.db), recent_samples(found, moment - timedelta(minutes=minutes, seconds=step))
    )
    mark_liveness(processes, moment.timestamp(), found.config.heartbeat_timeout)
    # No crawl asked for: every process, as this route always answered.
    run = run_or_404(latest_runs(processes), crawl) if crawl is not None else None
    if run is not None:
        samples, processes = run_samples(samples, run), run.workers
    chart = figures.chart(samples, moment.timestamp(), minutes * 60, step, stopped(processes))
    return web.json_response(
        {
            "step": step,
            "crawl": crawl,
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
        "The crawl at a glance: rates, totals, workers, frontier, domains, alerts; the crawl running (or "
        "the one asked for) with its own figures",
        (CRAWL,),
        statuses=(404,),
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
            CRAWL,
        ),
        statuses=(404,),
    ),
)

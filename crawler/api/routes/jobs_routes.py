"""Crawl jobs: the list, and cancelling one (its processes close with reason ``cancelled``)."""

from __future__ import annotations

from aiohttp import web

from crawler.api import params
from crawler.api.context import context, identity
from crawler.api.figures import numeric
from crawler.api.routing import Param, Route
from crawler.storage.jobs import job_status, list_jobs, pages_in_stats, request_cancel
from crawler.storage.observations import workers
from crawler.storage.values import utc_now

JOB = Param("job_id", {"type": "string", "minLength": 1, "maxLength": 64}, where="path", required=True)


async def jobs(request: web.Request) -> web.Response:
    limit = params.integer(request, "limit", 50, 1, 1000)
    found = context(request)
    rows = await list_jobs(found.db, limit, params.text(request, "status", 16))
    running = {row["id"]: row for row in rows if row["status"] == "running"}
    # A job's row gets its counts when it ends; until then they are its processes' latest heartbeats.
    for row in running.values():
        row["pages_fetched"] = row["pages_failed"] = 0
    for worker in await workers(found.db, running):
        fetched, failed = pages_in_stats(numeric(worker["stats"]))
        running[worker["job_id"]]["pages_fetched"] += int(fetched)
        running[worker["job_id"]]["pages_failed"] += int(failed)
    return web.json_response({"jobs": rows})


async def cancel(request: web.Request) -> web.Response:
    found, who, job = context(request), identity(request), request.match_info["job_id"]
    found_job = await job_status(found.db, job)
    if found_job is None:
        raise params.not_found(f"no job {job!r}")
    status, requested = found_job
    if status != "running":
        raise web.HTTPConflict(text=f'{{"error": "the job is {status}, not running"}}', content_type="application/json")
    if requested is None:
        await request_cancel(found.db, job, utc_now())
        await found.record(who, "job.cancel", job)
    return web.json_response({"job_id": job, "cancel_requested": True}, status=202)


ROUTES = (
    Route(
        "GET",
        "/api/jobs",
        jobs,
        "user",
        "Crawl jobs, newest first; a running job's pages are its processes' latest heartbeats",
        (
            Param("limit", {"type": "integer", "minimum": 1, "maximum": 1000, "default": 50}),
            Param("status", {"type": "string", "minLength": 1, "maxLength": 16}),
        ),
    ),
    Route(
        "POST",
        "/api/jobs/{job_id}/cancel",
        cancel,
        "admin",
        "Ask a running job to stop",
        (JOB,),
        statuses=(202, 404, 409),
    ),
)

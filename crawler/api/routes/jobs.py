"""Crawl jobs: the list, and cancelling one (its processes close with reason ``cancelled``)."""

from __future__ import annotations

from aiohttp import web

from crawler.api import params, queries
from crawler.api.database import utc_now
from crawler.api.routing import Param, Route
from crawler.api.services import identity, services

JOB = Param("job_id", {"type": "string", "minLength": 1, "maxLength": 64}, where="path", required=True)


async def jobs(request: web.Request) -> web.Response:
    limit = params.integer(request, "limit", 50, 1, 1000)
    status = params.text(request, "status", 16)
    where, values = ("WHERE status = ?", [status]) if status else ("", [])
    rows = await services(request).db.rows(
        f"SELECT {', '.join(queries.JOB_COLUMNS)} FROM crawl_jobs {where} ORDER BY started_at DESC LIMIT ?",
        queries.JOB_COLUMNS, (*values, limit),
    )  # fmt: skip
    return web.json_response({"jobs": rows})


async def cancel(request: web.Request) -> web.Response:
    found, who, job = services(request), identity(request), request.match_info["job_id"]
    rows = await found.db.raw("SELECT status, cancel_requested_at FROM crawl_jobs WHERE id = ?", (job,))
    if not rows:
        raise params.not_found(f"no job {job!r}")
    status, requested = rows[0]
    if status != "running":
        raise web.HTTPConflict(text=f'{{"error": "the job is {status}, not running"}}', content_type="application/json")
    if requested is None:
        await found.db.raw("UPDATE crawl_jobs SET cancel_requested_at = ? WHERE id = ?", (utc_now(), job))
        await found.record(who, "job.cancel", job)
    return web.json_response({"job_id": job, "cancel_requested": True}, status=202)


ROUTES = (
    Route("GET", "/api/jobs", jobs, "user", "Crawl jobs, newest first",
          (Param("limit", {"type": "integer", "minimum": 1, "maximum": 1000, "default": 50}),
           Param("status", {"type": "string", "minLength": 1, "maxLength": 16}))),
    Route("POST", "/api/jobs/{job_id}/cancel", cancel, "admin", "Ask a running job to stop", (JOB,), statuses=(202, 404, 409)),
)  # fmt: skip

"""``GET /metrics``: Prometheus text exposition of the whole crawl."""

from __future__ import annotations

import asyncio

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from crawler.api.auth import ANONYMOUS
from crawler.api.context import context, identity
from crawler.api.metrics import CrawlCollector, exposition
from crawler.api.overview import gather
from crawler.api.routing import Route
from crawler.storage.domains import busiest_domains, current_learned_delays

METRICS_PATH = "/metrics"


async def metrics(request: web.Request) -> web.Response:
    found = context(request)
    view, busiest, delays = await asyncio.gather(
        gather(found), busiest_domains(found.db, found.config.metrics_top_domains), current_learned_delays(found.db)
    )
    # The crawls' names are for the scraper with the token and logged-in users.
    named = identity(request) is not ANONYMOUS
    response = web.Response(body=exposition(CrawlCollector(view, busiest, delays, named)))
    response.headers["Content-Type"] = CONTENT_TYPE_LATEST
    return response


# Scrapers rarely log in: the same crawl-wide figures as /api/stats, no URL, and domain names
# only for the busiest CRAWLER_API_METRICS_TOP_DOMAINS (none unless the operator sets it).
ROUTES = (Route("GET", METRICS_PATH, metrics, "anonymous", "Prometheus metrics of the whole crawl"),)

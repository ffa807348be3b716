"""Every route of ``scrapy serve``, group by group."""

from crawler.api.routes import auth, controls, domains, frontier, health, jobs, metrics, pages, site, stats

ROUTES = (
    *site.ROUTES, *health.ROUTES, *metrics.ROUTES, *auth.ROUTES, *stats.ROUTES, *frontier.ROUTES,
    *pages.ROUTES, *domains.ROUTES, *controls.ROUTES, *jobs.ROUTES,
)  # fmt: skip

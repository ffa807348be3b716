"""Every route of ``scrapy serve``, group by group."""

from crawler.api.routes import (
    auth_routes,
    controls_routes,
    domains_routes,
    frontier_routes,
    health_routes,
    jobs_routes,
    metrics_routes,
    pages_routes,
    site_routes,
    stats_routes,
)

ROUTES = (
    *site_routes.ROUTES,
    *health_routes.ROUTES,
    *metrics_routes.ROUTES,
    *auth_routes.ROUTES,
    *stats_routes.ROUTES,
    *frontier_routes.ROUTES,
    *pages_routes.ROUTES,
    *domains_routes.ROUTES,
    *controls_routes.ROUTES,
    *jobs_routes.ROUTES,
)

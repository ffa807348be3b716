"""Crawl-wide Prometheus metrics, read from the database (and Redis) at scrape time.

The figures are those every crawl process publishes (its ``workers`` row), summed over every
process the database holds (counters that only grow, as Prometheus expects); the pages of each
crawl running, by crawl, for the scraper with the token and logged-in users; one series per
alert; per-domain series only for the busiest domains, so the number of series stays bounded."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from crawler.api import figures
from crawler.api.overview import Overview

DELAY_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
COUNTERS = (
    ("crawler_pages_fetched", "Pages fetched (responses received)", figures.PAGES),
    ("crawler_robots_denials", "URLs forbidden by robots.txt", "robotstxt/forbidden"),
    ("crawler_retries", "Requests retried", "retry/count"),
    ("crawler_throttled_responses", "429 (Too Many Requests) responses", figures.STATUS_PREFIX + "429"),
    ("crawler_lease_reclaims", "Shared-frontier leases expired and handed out again", "frontier/lease_reclaimed"),
    ("crawler_items_scraped", "Rows produced", "item_scraped_count"),
)


class CrawlCollector:
    def __init__(self, view: Overview, busiest: list[dict[str, Any]], delays: list[float], named: bool = False):
        self.view = view
        self.busiest = busiest
        self.delays = delays
        self.named = named
        """Whether the crawls' names may be labels."""

    def collect(self) -> Iterator[Metric]:
        view, totals = self.view, self.view.totals
        for name, documentation, key in COUNTERS:
            yield CounterMetricFamily(name, documentation, value=totals.get(key, 0.0))
        statuses = CounterMetricFamily("crawler_http_responses", "Responses by HTTP status", labels=["status"])
        for status, count in sorted(figures.statuses(totals).items()):
            statuses.add_metric([status], count)
        yield statuses
        yield GaugeMetricFamily(
            "crawler_pages_per_second",
            "Pages fetched per second over the last minute (over the seconds covered, for a younger crawl)",
            value=view.pages_per_second,
        )
        rate = view.success_rate
        yield GaugeMetricFamily(
            "crawler_fetch_success_rate",
            "Share of non-4xx/5xx responses over the last five minutes",
            value=1.0 if rate is None else rate,
        )
        yield GaugeMetricFamily(
            "crawler_frontier_size", "Requests waiting in the frontier", value=view.frontier["size"]
        )
        yield GaugeMetricFamily(
            "crawler_active_workers", "Crawl processes with a recent heartbeat", value=len(view.live_workers)
        )
        yield GaugeMetricFamily(
            "crawler_blocked_domains", "Domains blocked (429 or Retry-After) right now", value=view.domains["blocked"]
        )
        yield GaugeMetricFamily(
            "crawler_open_circuits", "Domains whose circuit is open", value=view.domains["circuits_open"]
        )
        yield GaugeMetricFamily(
            "crawler_storage_pending_rows",
            "Rows waiting to be written (storage lag)",
            value=totals.get("storage/pending_rows", 0.0),
        )
        yield GaugeMetricFamily("crawler_alerts", "Alerts firing", value=len(view.alerts))
        firing = GaugeMetricFamily("crawler_alert_firing", "Whether each alert fires (1) or not (0)", labels=["alert"])
        names = {alert.name for alert in view.alerts}
        for name in figures.ALERT_NAMES:
            firing.add_metric([name], float(name in names))
        yield firing
        yield GaugeMetricFamily(
            "crawler_workers_silent",
            "Crawl processes with no heartbeat for longer than the heartbeat timeout, not finished",
            value=sum(1 for alert in view.alerts if alert.name == figures.WORKER_CRASH),
        )
        if self.named:
            yield self._per_crawl()
        yield self._delay_histogram()
        yield from self._per_domain()

    def _per_crawl(self) -> Metric:
        pages = CounterMetricFamily(
            "crawler_crawl_pages_fetched", "Pages fetched by the run of each crawl running", labels=["crawl"]
        )
        for run in self.view.runs:
            if run.running:
                pages.add_metric([run.crawl_id], run.total(figures.PAGES))
        return pages

    def _delay_histogram(self) -> Metric:
        counts = [sum(1 for d in self.delays if d <= bound) for bound in DELAY_BUCKETS]
        buckets = [(repr(bound), count) for bound, count in zip(DELAY_BUCKETS, counts)] + [("+Inf", len(self.delays))]
        return HistogramMetricFamily(
            "crawler_learned_delay_seconds", "Learned delay per domain", buckets=buckets, sum_value=sum(self.delays)
        )

    def _per_domain(self) -> Iterator[Metric]:
        pages = CounterMetricFamily("crawler_domain_pages", "Pages fetched, busiest domains only", labels=["domain"])
        responses_429 = CounterMetricFamily(
            "crawler_domain_throttled_responses", "429 responses, busiest domains only", labels=["domain"]
        )
        delay = GaugeMetricFamily(
            "crawler_domain_delay_seconds", "Effective delay, busiest domains only", labels=["domain"]
        )
        queued = GaugeMetricFamily("crawler_domain_queued", "Requests queued, busiest domains only", labels=["domain"])
        for row in self.busiest:
            labels = [row["domain"]]
            pages.add_metric(labels, row["pages"] or 0)
            responses_429.add_metric(labels, row["responses_429"] or 0)
            delay.add_metric(labels, row["effective_delay"] or 0.0)
            queued.add_metric(labels, row["queued"] or 0)
        yield from (pages, responses_429, delay, queued)


def exposition(collector: CrawlCollector) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return generate_latest(registry)

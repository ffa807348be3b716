"""Backpressure on the URLs a page adds to the frontier (seed 002's ingestion controls): at most
``CRAWLER_FRONTIER_MAX_PER_DOMAIN`` queued for one domain, and at most
``CRAWLER_INGEST_RATE_PER_SITE`` new URLs a second from the pages of one site. A page's new
URLs beyond either are ``skipped`` rows saying which, its lowest priorities first; a URL already
queued is never taken back (that would be a new operation of both frontiers)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.settings import BaseSettings

from crawler.frontier.counts import FrontierCounts
from crawler.identity import site_of
from crawler.ingestion.rate import TokenBuckets
from crawler.politeness.slots import domain_key
from crawler.services import CrawlServices

if TYPE_CHECKING:  # a crawl not shared never loads redis-py
    from crawler.ingestion.rate_redis import RedisTokenBuckets

Dropped = list[tuple[Request, str]]


class Backpressure:
    crawler: Any
    ingest_rate: TokenBuckets | RedisTokenBuckets | None
    frontier_counts: FrontierCounts | None
    frontier_cap: int

    def configure_backpressure(self, services: CrawlServices, settings: BaseSettings) -> None:
        self.ingest_rate = services.ingest_rate
        self.frontier_cap = settings.getint("CRAWLER_FRONTIER_MAX_PER_DOMAIN")
        self.frontier_counts = FrontierCounts(self.crawler) if self.frontier_cap else None

    async def admitted(self, source: str, requests: list[Request]) -> tuple[list[Request], Dropped]:
        """Which of the new ``requests`` the page at ``source`` made go to the frontier, and
        why each of the others does not."""
        ranked = sorted(requests, key=lambda request: -request.priority)  # stable: page order within a priority
        dropped: Dropped = []
        if self.frontier_counts is not None and ranked:
            ranked = await self._within_frontier_cap(ranked, dropped)
        if self.ingest_rate is not None and ranked:
            site = site_of(source)
            granted = await self.ingest_rate.take(site, len(ranked))
            rate = self.ingest_rate
            why = (
                f"backpressure: the pages of {site} add at most {rate.rate:g} new URLs a second ({rate.burst} at once)"
            )
            dropped += [(request, why) for request in ranked[granted:]]
            self.crawler.stats.inc_value("backpressure/skipped/rate", len(ranked) - granted)
            ranked = ranked[:granted]
        return ranked, dropped

    async def _within_frontier_cap(self, ranked: list[Request], dropped: Dropped) -> list[Request]:
        assert self.frontier_counts is not None
        domains = [domain_key(request) for request in ranked]
        loads = await self.frontier_counts.loads(set(domains))
        room = {domain: self.frontier_cap - queued for domain, (_, queued) in loads.items()}
        kept = []
        for request, domain in zip(ranked, domains):
            if room[domain] > 0:
                room[domain] -= 1
                kept.append(request)
            else:
                why = f"backpressure: the frontier holds {self.frontier_cap} URLs of {domain} at most"
                dropped.append((request, why))
                self.crawler.stats.inc_value("backpressure/skipped/frontier_cap")
        return kept

"""Judge a queued page again by its URL pattern just before it leaves: pages of a session-id
trap are queued by the dozen before their first copies come back as twins; once the pattern
is refused (``CRAWLER_TRAP_PATTERN_TWINS``), those still queued are ``filtered`` rows naming
the rule, not downloads. Placed first, before the address guard and robots.txt."""

from __future__ import annotations

from typing import Self

from scrapy import Request
from scrapy.crawler import Crawler

from crawler.exceptions import TrapRefused
from crawler.services import CrawlServices
from crawler.traps.guard import TrapGuard

_JUDGED_AT_DISCOVERY = frozenset({None, "seed", "probe"})
"""Requests not judged again: those the spider did not discover (seeds, the soft-404 probe,
robots.txt, sitemaps)."""


class TrapMiddleware:
    def __init__(self, crawler: Crawler, traps: TrapGuard):
        self.stats = crawler.stats
        self.traps = traps

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler, CrawlServices.of(crawler).traps)

    def process_request(self, request: Request) -> None:
        meta = request.meta
        if meta.get("discovered_via") in _JUDGED_AT_DISCOVERY or "sitemap_depth" in meta:
            return
        refusal = self.traps.pattern_refusal(request.url)
        if refusal is not None:
            self.stats.inc_value("traps/filtered_queued")
            raise TrapRefused(refusal)

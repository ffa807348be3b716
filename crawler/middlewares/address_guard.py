"""Refuse requests to addresses the crawl must not reach, before anything is sent.

Placed before the robots middleware: a URL whose host is a literal address the guard refuses
(``127.0.0.21``, ``2130706453``, ``[::ffff:127.0.0.21]`` …) never gets a robots.txt fetch, a slot
or a connection; its row is ``blocked_by_policy`` and says why. Names are decided on the
addresses they resolve to, at connection time (``crawler.guard.resolver``). This covers every
way a URL arrives: links, redirects, robots.txt ``Sitemap:`` lines, sitemap entries. The rules
are the crawl's address guard's (``crawler.guard.checker``).
"""

from __future__ import annotations

from typing import Self

from scrapy import Request
from scrapy.crawler import Crawler

from crawler.guard.blocked import refuse
from crawler.guard.checker import AddressGuard
from crawler.services import CrawlServices


class AddressGuardMiddleware:
    def __init__(self, crawler: Crawler, guard: AddressGuard):
        self.stats = crawler.stats
        self.guard = guard

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler, CrawlServices.of(crawler).make_guard())

    def process_request(self, request: Request) -> None:
        refusal = self.guard.refusal(request)
        if refusal is not None:
            raise refuse(self.stats, request, refusal)

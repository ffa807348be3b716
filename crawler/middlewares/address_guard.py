"""Refuse requests to addresses the crawl must not reach, before anything is sent.

Early in the chain (50, before robots.txt at 100): a URL whose host is a literal address the
guard refuses (``127.0.0.21``, ``2130706453``, ``[::ffff:127.0.0.21]`` …) never gets a robots.txt
fetch, a slot or a connection; its row is ``blocked_by_policy`` and says why. Names are decided
on the addresses they resolve to, by ``crawler.guard.resolver.GuardedResolver`` at connection
time. This covers every way a URL arrives: links, redirects, robots.txt ``Sitemap:`` lines,
sitemap entries. The seeds' hosts are allowed whatever their address (``allow_seed``, called
by the spiders; in a shared crawl, the seeds of other processes and of ``scrapy seed`` are
found in the crawl's scope), as are ``CRAWLER_ALLOWED_NETWORKS``.
"""

from __future__ import annotations

from typing import Self
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.utils.httpobj import urlparse_cached

from crawler.guard import AddressPolicy, Refusal, parse_networks
from crawler.guard.blocked import refuse
from crawler.guard.resolver import installed_resolver


class AddressGuardMiddleware:
    def __init__(self, crawler: Crawler, policy: AddressPolicy):
        self.crawler = crawler
        self.stats = crawler.stats
        self.policy = policy

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        resolver = installed_resolver()
        if resolver is not None:  # one policy, so that the resolver knows the seeds too
            return cls(crawler, resolver.policy)
        return cls(crawler, AddressPolicy(parse_networks(crawler.settings.getlist("CRAWLER_ALLOWED_NETWORKS"))))

    @classmethod
    def of(cls, crawler: Crawler) -> AddressGuardMiddleware | None:
        """The crawl's guard, or None (disabled, or no engine: ``scrapy seed`` builds a spider)."""
        try:
            return crawler.get_downloader_middleware(cls)
        except RuntimeError:
            return None

    def allow_seed(self, url: str) -> None:
        host = urlsplit(url).hostname
        if host:
            self.policy.allow_seed(host)

    def seeded(self, request: Request) -> bool:
        """Whether the request's host is a seed's, of this process or (shared) another's; if so
        it is allowed from now on."""
        scope = getattr(self.crawler.spider, "scope", None)
        if scope is None or not scope.seeded(request.url):
            return False
        self.allow_seed(request.url)
        return True

    def refusal(self, request: Request) -> Refusal | None:
        """Why the request's host must not be reached, if it is a literal address refused."""
        host = urlparse_cached(request).hostname
        refusal = self.policy.check_host(host) if host else None
        return None if refusal is None or self.seeded(request) else refusal

    def process_request(self, request: Request) -> None:
        refusal = self.refusal(request)
        if refusal is not None:
            raise refuse(self.stats, request, refusal)

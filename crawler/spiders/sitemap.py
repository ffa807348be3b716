"""``scrapy crawl sitemap -a url=…``: discover pages from sitemaps and crawl them.

A seed may be a domain, a home page, a deep page, a robots.txt URL or a sitemap URL.
Sitemaps are found in robots.txt ``Sitemap:`` lines, else at the fallback paths; indexes are
followed recursively with loop and depth guards. With no sitemap at all, the seed is crawled.
Scrapy's ``SitemapSpider`` is not subclassed: its parser reads XML only and drops entries
with several ``loc``. robots.txt is read once, by the crawl's robots.txt rules (Protego's, which
take ``Sitemaps`` and ``Site-map`` as search engines do; ``sitemap_urls_from_robots`` takes
``Sitemap`` alone).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from datetime import UTC, datetime
from functools import partial
from urllib.parse import urljoin

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import Response
from twisted.python.failure import Failure

from crawler.extraction.budget import BudgetExceeded
from crawler.frontier.unfetched import record_outcome
from crawler.identity import InvalidURL, url_hash
from crawler.items import PageItem, SitemapEntryItem
from crawler.robots.rules import RobotsRules
from crawler.sitemaps import SitemapDocument, SitemapError, parse_sitemap
from crawler.sitemaps.discovery import (
    Discovery,
    Phase,
    SeedKind,
    fallback_sitemap_urls,
    robots_url,
    seed_kind,
)
from crawler.spiders.base import BaseCrawlSpider, Candidate, in_turns


class SitemapCrawlSpider(BaseCrawlSpider):
    name = "sitemap"

    def _configure(self, crawler: Crawler) -> None:
        super()._configure(crawler)
        settings = crawler.settings
        self.fallback_paths = settings.getlist("CRAWLER_SITEMAP_FALLBACK_PATHS")
        self.sitemap_max_depth = settings.getint("CRAWLER_SITEMAP_MAX_DEPTH")
        self.sitemap_max_size = settings.getint("CRAWLER_SITEMAP_MAX_SIZE")
        self.sitemap_strict = settings.getbool("CRAWLER_SITEMAP_STRICT")
        self.sitemaps_seen: set[str] = set()
        crawler.signals.connect(self.discovery_dropped, signal=signals.request_dropped)

    def seed_requests(self, urls: Iterable[str]) -> Iterator[Request]:
        """Each seed's discovery: its robots.txt first, or the sitemap it names."""
        for url in urls:
            discovery = Discovery(url)
            kind = seed_kind(url)
            if kind is SeedKind.SITEMAP:
                discovery.phase = Phase.FALLBACK  # a failed sitemap seed falls back to the page
                yield from self._sitemap_requests(discovery, [url], depth=0)
            else:
                yield Request(
                    robots_url(url),
                    callback=self.parse_robots,
                    errback=self.robots_failed,
                    priority=1000,
                    meta={"discovery": discovery, "dont_obey_robotstxt": True, "dont_filter_content_type": True},
                )

    def parse_robots(self, response: Response) -> Iterator[Request | PageItem]:
        discovery: Discovery = response.meta["discovery"]
        listed = [urljoin(response.url, url) for url in self._robots_rules(response).sitemaps]
        self.crawler.stats.inc_value("sitemap/robots_listed", len(listed))
        if listed:
            yield from self._sitemap_requests(discovery, listed, depth=0)
        if discovery.pending == 0:
            yield from self._next_phase(discovery, discovery.advance())

    def _robots_rules(self, response: Response) -> RobotsRules:
        robots = self.services.robots
        if robots is not None:
            return robots.rules_of(response)
        # robots.txt not obeyed: read here for its sitemaps alone, which are the same for every agent.
        return RobotsRules.parse(response.body, "*")

    def robots_failed(self, failure: Failure) -> Iterator[Request | PageItem]:
        discovery: Discovery = failure.request.meta["discovery"]
        self.logger.debug("No robots.txt for %s: %s", discovery.seed, failure.value)
        yield from self._next_phase(discovery, discovery.advance())

    async def parse_sitemap(self, response: Response) -> AsyncIterator[Request | PageItem | SitemapEntryItem]:
        discovery: Discovery = response.meta["discovery"]
        parse = partial(
            parse_sitemap, response.body, response.url, max_size=self.sitemap_max_size, strict=self.sitemap_strict
        )
        try:
            document = await self.recorder.workers.run(parse)
        except (SitemapError, BudgetExceeded) as exc:
            self.logger.warning("Unreadable sitemap %s: %s", response.url, exc)
            self.crawler.stats.inc_value("sitemap/unreadable")
            yield self.recorder.sitemap_unreadable(response, str(exc))
            for output in self._next_phase(discovery, discovery.finished(0)):
                yield output
            return
        depth = response.meta["sitemap_depth"]
        found = 0
        if document.is_index:
            children = [entry.loc for entry in document.entries]
            requests = self._sitemap_requests(discovery, children, depth=depth + 1, problems=document.problems)
            async for request in in_turns(requests):
                yield request
        else:
            candidates: list[Candidate] = []
            async for entry in in_turns(self._entries(response, document, candidates)):
                found += 1
                yield entry
            async for request in self.plan(candidates):  # only the pages that are due
                yield request
        # The row last: it names the children the index's requests left out.
        if document.problems:
            self.crawler.stats.inc_value("sitemap/problems", len(document.problems))
        yield self.recorder.sitemap(response, len(document.entries), document.problems)
        for output in self._next_phase(discovery, discovery.finished(found)):
            yield output

    def sitemap_failed(self, failure: Failure) -> Iterator[Request | PageItem]:
        discovery: Discovery = failure.request.meta["discovery"]
        yield self.recorder.failed(failure, failure.request)
        yield from self._next_phase(discovery, discovery.finished(0))

    def discovery_dropped(self, request: Request) -> None:
        """A discovery request the scheduler dropped as a duplicate gets neither callback nor
        errback, so its seed's discovery counts it here or would wait for it forever: robots.txt
        listed as a sitemap, a sitemap redirecting to one already requested, the robots.txt of a
        second seed of the same site (which goes on as if the file listed nothing)."""
        discovery: Discovery | None = request.meta.get("discovery")
        if discovery is None:
            return
        if request.callback == self.parse_robots:
            phase = discovery.advance()
        else:
            self.crawler.stats.inc_value("sitemap/duplicate")
            # A redirect to a URL already requested has its row from the storage pipeline.
            if not request.meta.get("redirect_urls"):
                record_outcome(self.crawler, request, "filtered", "not fetched as a sitemap: already requested")
            phase = discovery.finished(0)
        for output in self._next_phase(discovery, phase):
            self.crawler.engine.crawl(output)  # requests only: a seed is never a filtered row

    def _entries(
        self, response: Response, document: SitemapDocument, candidates: list[Candidate]
    ) -> Iterator[SitemapEntryItem]:
        """A row for each listed URL; those in scope are added to ``candidates``."""
        depth = response.meta.get("depth", 0) + 1
        now = datetime.now(UTC)
        for entry in document.entries:
            try:
                url = self.normalize(entry.loc)
            except InvalidURL as exc:
                self.logger.debug("Invalid URL %r in sitemap %s: %s", entry.loc, response.url, exc)
                self.crawler.stats.inc_value("sitemap/invalid_url")
                continue
            yield SitemapEntryItem(
                sitemap_url=response.url,
                url=url,
                url_hash=url_hash(url),
                lastmod=entry.lastmod,
                changefreq=entry.changefreq,
                priority=entry.priority,
                job_id=self.job_id,
                discovered_at=now,
            )
            if url not in self.scope:
                self.crawler.stats.inc_value("sitemap/offsite")
                continue
            meta = {
                "sitemap_lastmod": entry.lastmod,
                "sitemap_changefreq": entry.changefreq,
                "sitemap_priority": entry.priority,
            }
            candidates.append(Candidate(url, depth, "sitemap", response.url, meta))

    def _sitemap_requests(
        self, discovery: Discovery, urls: list[str], *, depth: int, problems: list[str] | None = None
    ) -> Iterator[Request]:
        """Requests for the sitemaps not requested yet; ``problems`` (the listing index's) is
        told which are left out and why."""
        left_out = problems if problems is not None else []
        if depth > self.sitemap_max_depth:
            self.logger.warning("Sitemap index nesting deeper than %d at %s", self.sitemap_max_depth, urls[:3])
            self.crawler.stats.inc_value("sitemap/too_deep", len(urls))
            left_out.append(f"not followed: sitemap indexes nested deeper than {self.sitemap_max_depth}")
            return
        for raw in urls:
            try:
                url = self.normalize(raw)
            except InvalidURL as exc:
                self.crawler.stats.inc_value("sitemap/invalid_url")
                left_out.append(f"skipped {raw[:200]!r}: {exc}")
                continue
            if url in self.sitemaps_seen:  # an index listing itself or an ancestor
                self.crawler.stats.inc_value("sitemap/loop")
                left_out.append(f"skipped {url[:200]!r}: a sitemap already requested")
                continue
            self.sitemaps_seen.add(url)
            discovery.started(url)
            yield Request(
                url,
                callback=self.parse_sitemap,
                errback=self.sitemap_failed,
                priority=1000 - depth,
                meta={
                    "discovery": discovery,
                    "sitemap_depth": depth,
                    "discovered_via": "sitemap-index" if depth else "sitemap-seed",
                    "download_maxsize": self.sitemap_max_size,
                    "dont_filter_content_type": True,  # sitemaps come as XML, gzip or text
                },
            )

    def _next_phase(self, discovery: Discovery, phase: Phase | None) -> Iterator[Request | PageItem]:
        if phase is Phase.FALLBACK:
            urls = fallback_sitemap_urls(discovery.seed, self.fallback_paths)
            requests = list(self._sitemap_requests(discovery, urls, depth=0))
            if requests:
                yield from requests
                return
            phase = discovery.advance()
        if phase is Phase.PAGE:
            self.logger.info("No sitemap found for %s: crawling it directly", discovery.seed)
            self.crawler.stats.inc_value("sitemap/none_found")
            request = self.page_request(discovery.seed, depth=0, via="seed")
            if request is not None:
                yield request

"""What both spiders share: seeds and job identity from arguments, the crawl budget, URL
identity and scope, and a row for every outcome."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any, Self

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.http import Response
from twisted.python.failure import Failure

from crawler.extraction import PageData
from crawler.frontier.priority import request_priority
from crawler.frontier.scope import Scope
from crawler.frontier.seeds import parse_seeds
from crawler.identity import InvalidURL, UrlNormalizer
from crawler.items import PageItem
from crawler.outcomes import OutcomeRecorder
from crawler.shared.connection import crawl_id, shared_services
from crawler.shared.scope import SharedScope

# Spider arguments that are settings: ``-a max_pages=50`` is ``-s CRAWLER_MAX_PAGES=50``.
ARGUMENT_SETTINGS = {
    "max_pages": "CRAWLER_MAX_PAGES",
    "max_depth": "DEPTH_LIMIT",
    "scope": "CRAWLER_SCOPE",
    "max_time": "CLOSESPIDER_TIMEOUT",
}


class BaseCrawlSpider(Spider):
    seeds: list[str]
    job_id: str
    default_callbacks = ("parse_page", "page_failed")
    """The callback and errback of most requests, which the shared frontier does not store."""

    def __init__(
        self,
        url: str | None = None,
        seeds_file: str | None = None,
        job_id: str | None = None,
        crawl: str | None = None,
        **kwargs: Any,
    ):
        # scrapyd passes its job id as ``_job``
        self.job_id = job_id or kwargs.pop("_job", None) or uuid.uuid4().hex
        super().__init__(**kwargs)
        # A worker joining a named shared crawl may start without seeds (``scrapy seed`` adds them).
        self.seeds = parse_seeds(url, seeds_file) if url or seeds_file or not crawl else []
        self.crawl_id = crawl_id(self.name, self.seeds, crawl)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        for argument, setting in ARGUMENT_SETTINGS.items():
            if argument in kwargs:
                crawler.settings.set(setting, kwargs.pop(argument), priority="spider")
        kwargs.setdefault("crawl", crawler.settings.get("CRAWLER_CRAWL_ID") or None)
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider._configure(crawler)
        return spider

    def _configure(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.normalize = UrlNormalizer(settings.getlist("CRAWLER_TRACKING_PARAMS"))
        self.recorder = OutcomeRecorder(settings, self.normalize, self.job_id, settings["BOT_NAME"])
        self.max_pages = settings.getint("CRAWLER_MAX_PAGES")
        services = shared_services(crawler, self.crawl_id)
        mode = settings.get("CRAWLER_SCOPE")
        self.scope = Scope(mode) if services is None else SharedScope(mode, services.link, services.key("scope"))
        self.seen: set[str] = set()
        self.pages_scheduled = 0

    def seed_urls(self) -> Iterator[str]:
        """The seeds in normal form, each added to the crawl's scope; an invalid seed is logged
        and skipped."""
        for seed in self.seeds:
            try:
                url = self.normalize(seed)
            except InvalidURL as exc:
                self.logger.error("Invalid seed %r: %s", seed, exc)
                self.crawler.stats.inc_value("seeds/invalid")
                continue
            self.scope.add_seed(url)
            yield url

    def budget_left(self) -> bool:
        return not self.max_pages or self.pages_scheduled < self.max_pages

    def page_request(self, url: str, *, depth: int, via: str, referrer: str | None = None, **meta: Any) -> Request | None:
        """A request for a page not seen before, within the budget; None otherwise."""
        if url in self.seen or not self.budget_left():
            return None
        self.seen.add(url)
        self.pages_scheduled += 1
        return Request(
            url,
            callback=self.parse_page,
            errback=self.page_failed,
            priority=request_priority(url, depth, seed=via == "seed"),
            meta={"depth": depth, "discovered_via": via, "referrer": referrer, **meta},
        )

    def parse_page(self, response: Response) -> Iterator[PageItem | Request]:
        item, page = self.recorder.fetched(response)
        if page is not None:
            # Links before the row: in a shared crawl the stored row ends the page's lease, so
            # what the page links to must be queued by then.
            yield from self.follow(response, item, page)
        yield item

    def follow(self, response: Response, item: PageItem, page: PageData) -> Iterator[Request]:
        """Requests for what a page links to; the sitemap spider follows nothing."""
        return iter(())

    def page_failed(self, failure: Failure) -> Iterator[PageItem]:
        yield self.recorder.failed(failure, failure.request)

"""``scrapy crawl links -a url=…``: breadth-first link following from the seeds."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from scrapy.crawler import Crawler

from crawler.extraction import PageData
from crawler.items import PageItem
from crawler.spiders.base import BaseCrawlSpider, Candidate


class LinksSpider(BaseCrawlSpider):
    name = "links"
    follows_links = True

    def _configure(self, crawler: Crawler) -> None:
        super()._configure(crawler)
        settings = crawler.settings
        self.max_links = settings.getint("CRAWLER_MAX_LINKS_PER_PAGE")
        self.respect_nofollow = settings.getbool("CRAWLER_RESPECT_NOFOLLOW")
        self.follow_canonical = settings.getbool("CRAWLER_FOLLOW_CANONICAL")

    async def start(self) -> AsyncIterator[Any]:
        # Scrapy takes start requests as it has room for them: the links of the first seeds'
        # pages are planned while later seeds wait, and would take their share of the budget.
        seeds = list(dict.fromkeys(self.seed_urls()))
        self.seeds_unplanned.update(seeds)
        try:
            async for request in self.plan(Candidate(url, 0, "seed") for url in seeds):
                yield request
        finally:
            self.seeds_unplanned.clear()  # planning cut short (an error) keeps no page for ever

    def followed_links(self, item: PageItem, page: PageData) -> list[str]:
        if self.respect_nofollow and page.robots.nofollow:
            return []
        links = page.followable if self.respect_nofollow else page.links
        links = links[: self.max_links] if self.max_links else links
        if self.follow_canonical and page.canonical and page.canonical != item.url:
            links = [page.canonical, *links]
        return links

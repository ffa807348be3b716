"""``scrapy crawl links -a url=…``: breadth-first link following from the seeds."""

from __future__ import annotations

from collections.abc import Iterator

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from crawler.extraction import PageData
from crawler.items import PageItem
from crawler.spiders.base import BaseCrawlSpider


class LinksSpider(BaseCrawlSpider):
    name = "links"

    def _configure(self, crawler: Crawler) -> None:
        super()._configure(crawler)
        settings = crawler.settings
        self.max_depth = settings.getint("DEPTH_LIMIT")
        self.max_links = settings.getint("CRAWLER_MAX_LINKS_PER_PAGE")
        self.respect_nofollow = settings.getbool("CRAWLER_RESPECT_NOFOLLOW")
        self.follow_canonical = settings.getbool("CRAWLER_FOLLOW_CANONICAL")

    def follow(self, response: Response, item: PageItem, page: PageData) -> Iterator[Request]:
        depth = response.meta.get("depth", 0)
        if self.max_depth and depth >= self.max_depth:
            return
        if self.respect_nofollow and page.robots.nofollow:
            return
        links = page.followable if self.respect_nofollow else page.links
        links = links[: self.max_links] if self.max_links else links
        if self.follow_canonical and page.canonical and page.canonical != item.url:
            links = [page.canonical, *links]
        stats = self.crawler.stats
        for link in links:
            # Strings are checked before any Request is built: most links were seen before.
            if link in self.seen:
                continue
            if link not in self.scope:
                stats.inc_value("links/offsite")
                continue
            request = self.page_request(link, depth=depth + 1, via="link", referrer=item.url)
            if request is None:
                stats.inc_value("links/over_budget")
                return
            yield request

"""The baseline: a stock Scrapy ``CrawlSpider`` following every link with ``LinkExtractor``.

Run outside the project (``scrapy runspider``) so that none of the project's settings apply.
``-a url=`` takes one seed or a comma-separated list; each seed's host is allowed.
"""

from urllib.parse import urlsplit

from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class StockCrawlSpider(CrawlSpider):
    name = "stock"
    rules = (Rule(LinkExtractor(), callback="parse_page", follow=True),)

    def __init__(self, url: str, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = url.split(",")
        self.allowed_domains = sorted({urlsplit(seed).hostname for seed in self.start_urls})

    def parse_start_url(self, response):
        return self.parse_page(response)

    def parse_page(self, response):
        yield {"url": response.url, "title": response.css("title::text").get()}

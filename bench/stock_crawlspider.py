"""The baseline: a stock Scrapy ``CrawlSpider`` following every link with ``LinkExtractor``.

Run outside the project (``scrapy runspider``) so that none of the project's settings apply.
"""

from urllib.parse import urlsplit

from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class StockCrawlSpider(CrawlSpider):
    name = "stock"
    rules = (Rule(LinkExtractor(), callback="parse_page", follow=True),)

    def __init__(self, url: str, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [url]
        self.allowed_domains = [urlsplit(url).hostname]

    def parse_start_url(self, response):
        return self.parse_page(response)

    def parse_page(self, response):
        yield {"url": response.url, "title": response.css("title::text").get()}

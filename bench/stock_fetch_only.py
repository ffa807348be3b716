"""A floor under every crawler of the corpus: stock Scrapy fetching a list of URLs and doing
nothing with the pages (no links, no items), so its CPU per page is what Scrapy's download,
decompression and response machinery cost on their own.

Run outside the project (``scrapy runspider``) so that none of the project's settings apply.
``-a urls=FILE`` names a file of URLs, one per line.
"""

from pathlib import Path

from scrapy import Request, Spider


class StockFetchOnlySpider(Spider):
    name = "fetch_only"

    def __init__(self, urls: str, **kwargs):
        super().__init__(**kwargs)
        self.urls = Path(urls).read_text().split()

    async def start(self):
        for url in self.urls:
            yield Request(url)

    def parse(self, response):
        return None

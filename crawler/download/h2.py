"""``CRAWLER_HTTP2``'s handler for ``https``: Scrapy's HTTP/2 handler, each request held until its
domain may be sent to and the guard's refusals said as such (``crawler.download.gate``), as over
HTTP/1.1. Its departures are not stamped on the wire: the limiter counts the next one from the
response (``limiter/unstamped_count``), which is later than the request left, so slower, never
early."""

from __future__ import annotations

from scrapy import Request
from scrapy.core.downloader.handlers.http2 import H2DownloadHandler
from scrapy.crawler import Crawler
from scrapy.http import Response

from crawler.download.gate import DepartureGate


class GuardedH2DownloadHandler(H2DownloadHandler):
    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        self.gate = DepartureGate(crawler)

    async def download_request(self, request: Request) -> Response:
        return await self.gate.download(request, super().download_request)

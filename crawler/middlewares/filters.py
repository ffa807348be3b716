"""Keep only the responses the crawl wants (``CRAWLER_ACCEPT_CONTENT_TYPES``, then
``CRAWLER_REJECT_CONTENT_TYPES``), and no binary content served under a text type (sniffed from
the first bytes: a PNG served as ``text/html`` is not stored as text).

A refused response becomes a ``filtered`` row with the reason, without its body. The type is
judged as soon as the headers arrive (``headers_received``), and the body of a refused one is not
downloaded (``StopDownload``); the response, empty, then gets its row here. Sizes and compression
are Scrapy's: ``DOWNLOAD_MAXSIZE`` caps the body as received and as decompressed. Placed under
the redirect middleware, so only final answers are judged.
"""

from __future__ import annotations

from typing import Any, Self

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import StopDownload
from scrapy.http import Headers, Response

from crawler.exceptions import ResponseFiltered
from crawler.http.content import content_type_allowed
from crawler.http.headers import media_type as response_media_type
from crawler.http.headers import parse_media_type
from crawler.http.sniff import binary_kind


class ContentTypeFilterMiddleware:
    def __init__(self, crawler: Crawler):
        settings = crawler.settings
        self.accept = [p.lower() for p in settings.getlist("CRAWLER_ACCEPT_CONTENT_TYPES")]
        self.reject = [p.lower() for p in settings.getlist("CRAWLER_REJECT_CONTENT_TYPES")]
        self.stats = crawler.stats
        crawler.signals.connect(self.headers_received, signal=signals.headers_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def headers_received(self, headers: Headers, body_length: int, request: Request, **kwargs: Any) -> None:
        # A redirect's body is never read; its target is judged on its own.
        if request.meta.get("dont_filter_content_type") or b"Location" in headers:
            return
        content_type = headers.get(b"Content-Type")
        media_type = parse_media_type(content_type.decode("latin-1") if content_type else None)
        if not content_type_allowed(media_type, self.accept, self.reject):
            self.stats.inc_value("filters/content_type_stopped")
            raise StopDownload(fail=False)

    def process_response(self, request: Request, response: Response) -> Response:
        if request.meta.get("dont_filter_content_type") or not 200 <= response.status < 300:
            return response
        media_type = response_media_type(response)
        if not content_type_allowed(media_type, self.accept, self.reject):
            self.stats.inc_value(f"filters/content_type/{media_type}")
            raise ResponseFiltered(f"content type {media_type} not accepted", response)
        kind = binary_kind(response.body)
        if kind is not None:
            self.stats.inc_value("filters/binary_as_text")
            raise ResponseFiltered(f"content is {kind}, served as {media_type or 'no content type'}", response)
        return response

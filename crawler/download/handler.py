"""``DOWNLOAD_HANDLERS`` for ``http`` and ``https``: Scrapy's HTTP/1.1 handler, with the
response's header section bounded (``CRAWLER_MAX_HEADER_BYTES``, ``CRAWLER_MAX_HEADERS``) and a
connection the guarded resolver refused reported as ``BlockedByPolicy`` with its reason, not
as a failed lookup to retry."""

from __future__ import annotations

from functools import partial

from scrapy import Request
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.crawler import Crawler
from scrapy.exceptions import CannotResolveHostError
from scrapy.http import Response
from scrapy.utils.httpobj import urlparse_cached

from crawler.download.headers import BoundedHTTP11ClientFactory, HeaderLimits
from crawler.guard.blocked import refuse
from crawler.guard.resolver import installed_resolver
from crawler.middlewares.address_guard import AddressGuardMiddleware


class GuardedHTTPDownloadHandler(HTTP11DownloadHandler):
    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        settings = crawler.settings
        limits = HeaderLimits(settings.getint("CRAWLER_MAX_HEADER_BYTES"), settings.getint("CRAWLER_MAX_HEADERS"))
        self._pool._factory = partial(BoundedHTTP11ClientFactory, limits=limits)

    async def download_request(self, request: Request) -> Response:
        try:
            return await super().download_request(request)
        except CannotResolveHostError:
            resolver = installed_resolver()
            host = urlparse_cached(request).hostname or ""
            refusal = resolver.refusals.get(host) if resolver is not None else None
            if refusal is None:
                raise
            guard = AddressGuardMiddleware.of(self._crawler)
            if guard is not None and guard.seeded(request):  # a seed of another process
                return await super().download_request(request)
            raise refuse(self._crawler.stats, request, refusal) from None

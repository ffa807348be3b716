"""``CRAWLER_HTTP2``: https URLs fetched with Scrapy's HTTP/2 download handler
(``crawler.download.h2``: each request held until its domain may be sent to, as over HTTP/1.1).

One connection per host carries the requests of that host as concurrent streams. Every request
still passes the downloader middlewares, so the domain limiter reserves and counts each one as
it does over HTTP/1.1. Scrapy's handler speaks only HTTP/2 (no fall back to HTTP/1.1 for a
server that does not offer it) and only over TLS: plain http URLs keep the HTTP/1.1 handler.
An add-on because the switch is read once every source of settings has been (``-s`` included).
"""

from __future__ import annotations

from scrapy.settings import BaseSettings

H2_HANDLER = "crawler.download.h2.GuardedH2DownloadHandler"


class Http2:
    def update_settings(self, settings: BaseSettings) -> None:
        if settings.getbool("CRAWLER_HTTP2"):
            # As strong as the switch was given (``-s`` beats a project's own https handler).
            handlers = settings["DOWNLOAD_HANDLERS"]
            handlers.set("https", H2_HANDLER, priority=settings.getpriority("CRAWLER_HTTP2"))

"""Every response as it came off the wire, into WARC files (``CRAWLER_WARC_DIR``): a request
record and a response record per fetch (robots.txt, sitemaps, redirects and retried answers
included), a revisit record where the answer repeats the stored copy (a 304, or the same
payload), and a metadata record of each page's outlinks once the spider has them.

Placed above redirects (600), retries (550) and decompression (590), so it sees every answer
with its body as sent (gzip stays gzip), and under the request log (790) and the limiter (800),
which note the answer first. Records are made and written on a thread of their own
(``crawler.warc.writer``); the answer goes on once its record is written, carrying where it went
(``crawler.warc.ARCHIVED``), which its row notes. One set of files per process, named after its
worker id, so the processes of a shared crawl write side by side.
"""

from __future__ import annotations

import logging
import socket
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import scrapy
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.settings import Settings

from crawler.control.worker import worker_id
from crawler.items import PageItem
from crawler.politeness.config import ROBOTS_MIDDLEWARE, SCRAPY_ROBOTS_MIDDLEWARE, robots_obeyed
from crawler.recrawl.stored import stored_payload_digest
from crawler.robots.service import CACHED_RESPONSE_FLAG
from crawler.warc import ARCHIVED, archived_in
from crawler.warc.exchange import captured

if TYPE_CHECKING:
    from crawler.warc.writer import WarcWriter

logger = logging.getLogger(__name__)

CONFORMS_TO = "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"


class WarcMiddleware:
    def __init__(self, crawler: Crawler, writer: WarcWriter):
        self.crawler = crawler
        self.stats = crawler.stats
        self.writer = writer
        crawler.signals.connect(self.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        folder = settings.get("CRAWLER_WARC_DIR")
        if not folder:
            raise NotConfigured
        # Imported once on: Scrapy imports this module in every crawl, and warcio's import is not free.
        from crawler.warc.files import WarcFiles
        from crawler.warc.writer import WarcWriter

        spider = crawler.spider
        assert spider is not None  # Scrapy makes the spider before the engine and its middlewares
        job_id = getattr(spider, "job_id", spider.name)
        files = WarcFiles(
            Path(folder),
            prefix=settings["BOT_NAME"],
            writer=worker_id(job_id),
            max_size=settings.getint("CRAWLER_WARC_MAX_SIZE"),
            info=warcinfo(settings, getattr(spider, "crawl_id", None), job_id),
        )
        logger.info("Writing WARC files to %s", files.folder.resolve())
        return cls(crawler, WarcWriter(files))

    async def process_response(self, request: Request, response: Response) -> Response:
        if CACHED_RESPONSE_FLAG in response.flags:  # nothing came off the wire
            return response
        exchange = captured(request, response, datetime.now(UTC), stored_payload_digest(request.meta.get("recrawl")))
        try:
            archived = await self.writer.fetch(exchange)
        except OSError as exc:  # the crawl goes on; its rows say nothing of an archive
            request.meta.pop(ARCHIVED, None)
            self.stats.inc_value("warc/write_failed")
            logger.error("Could not archive %s: %s", response.url, exc)
            return response
        request.meta[ARCHIVED] = archived.as_meta()
        return response

    async def item_scraped(self, item: Any, response: Response | Any) -> None:
        if not isinstance(item, PageItem) or not isinstance(response, Response):
            return
        archived = archived_in(response.meta)
        links = item.followed_links or item.links
        if archived is None or not links:
            return
        try:
            await self.writer.outlinks(response.url, archived.record_id, links, datetime.now(UTC))
        except OSError as exc:
            self.stats.inc_value("warc/write_failed")
            logger.error("Could not archive the outlinks of %s: %s", response.url, exc)

    async def spider_closed(self) -> None:
        await self.writer.close()
        for kind, count in self.writer.files.written.items():
            self.stats.set_value(f"warc/{kind}" if kind in ("bytes", "files") else f"warc/records/{kind}", count)


def warcinfo(settings: Settings, crawl: str | None, job_id: str) -> dict[str, str]:
    """The fields of each file's ``warcinfo`` record (those Heritrix writes, where they apply)."""
    return {
        "software": f"crawler (Scrapy {scrapy.__version__}, warcio {version('warcio')})",
        "format": "WARC File Format 1.1",
        "conformsTo": CONFORMS_TO,
        "hostname": socket.gethostname(),
        "http-header-user-agent": settings["USER_AGENT"],
        "robots": "classic" if robots_obeyed(settings, (ROBOTS_MIDDLEWARE, SCRAPY_ROBOTS_MIDDLEWARE)) else "ignore",
        "isPartOf": crawl or "",
        "description": f"job {job_id}",
    }

"""Build the row for every outcome of a request, so that no accepted URL goes unrecorded."""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

from scrapy import Request
from scrapy.exceptions import DownloadCancelledError, IgnoreRequest
from scrapy.http import Response, TextResponse
from scrapy.settings import Settings
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.python import global_object_name
from twisted.python.failure import Failure
from w3lib.encoding import read_bom

from crawler.exceptions import BlockedByPolicy, NotSent, RedirectFailed, ResponseFiltered, RobotsUnreachable
from crawler.extraction import PageData, extract_page, parse_robots_directives
from crawler.extraction.budget import Budget, DocumentWorkers
from crawler.extraction.html import walk_is_bounded
from crawler.guard.proxies import through_proxy
from crawler.http.failures import describe, is_site_failure
from crawler.http.headers import header, header_values, http_date, media_type
from crawler.identity import host_of, surt_key, url_hash
from crawler.identity.resolve import LinkResolver
from crawler.items import PageItem
from crawler.twins.simhash import as_hex, simhash_of_utf8
from crawler.warc import archived_in

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})


def page_item(url: str, status: str, crawled_at: datetime | None = None, **fields: Any) -> PageItem:
    """The row of ``url`` with its identity filled in (hash, SURT key, domain), crawled now unless
    said otherwise."""
    return PageItem(
        url=url,
        url_hash=url_hash(url),
        surt_key=surt_key(url),
        domain=host_of(url),
        status=status,
        crawled_at=crawled_at or datetime.now(UTC),
        **fields,
    )


class OutcomeRecorder:
    def __init__(
        self,
        settings: Settings,
        normalize: Callable[[str], str],
        job_id: str,
        bot_name: str,
        handed_over: Callable[[], None] | None = None,
    ):
        """``handed_over()``: a page tried on the reactor went to a document thread."""
        self.normalize = normalize
        self.resolver = LinkResolver(normalize)
        self.job_id = job_id
        self.user_agents = (bot_name,)
        self.store_body = settings.getbool("CRAWLER_STORE_BODY")
        self.body_maxsize = settings.getint("CRAWLER_STORE_BODY_MAXSIZE")
        self.store_links = settings.getbool("CRAWLER_STORE_LINKS")
        self.download_maxsize = settings.getint("DOWNLOAD_MAXSIZE")
        self.max_text = settings.getint("CRAWLER_MAX_TEXT_CHARS")
        self.max_links = settings.getint("CRAWLER_MAX_LINKS_READ")
        self.fingerprint = settings.getbool("CRAWLER_TWINS_ENABLED")
        self.workers = DocumentWorkers.from_settings(settings, handed_over)

    def base(self, request: Request, status: str) -> PageItem:
        """A row for ``request`` with the crawl context it carries in its meta."""
        meta = request.meta
        url = meta.get("redirect_urls", [request.url])[0]
        return page_item(
            url,
            status,
            depth=meta.get("depth", 0),
            priority=request.priority,
            discovered_via=meta.get("discovered_via"),
            referrer=meta.get("referrer"),
            sitemap_lastmod=meta.get("sitemap_lastmod"),
            sitemap_changefreq=meta.get("sitemap_changefreq"),
            sitemap_priority=meta.get("sitemap_priority"),
            job_id=self.job_id,
        )

    async def fetched(self, response: Response) -> tuple[PageItem, PageData | None]:
        """The row of a response, and what the page says (None if it is not HTML). Decoding and
        extraction run on the reactor or in a document thread, within the document budgets."""
        item = self.base(response.request, "fetched")
        self._describe_response(item, response)
        page: PageData | None = None
        directives = parse_robots_directives(header_values(response, "X-Robots-Tag"), self.user_agents)
        try:
            if item.content_type in _HTML_TYPES and isinstance(response, TextResponse):
                page, fingerprint = await self.workers.extract(
                    partial(self._extract, response), len(response.body), walk_is_bounded()
                )
                item.simhash = None if fingerprint is None else as_hex(fingerprint)
                directives = directives | page.robots
                page.robots = directives
                item.title, item.description, item.text = page.title, page.description, page.text
                item.content_hash = page.text_hash
                item.links_count = len(page.links)
                if self.store_links:
                    item.links = json.dumps(page.links)
            elif isinstance(response, TextResponse):
                item.text = await self.workers.extract(
                    lambda budget: _squashed_text(response), len(response.body), bounded=False
                )
        except Exception as exc:  # bad input must not stop the crawl: the row says why
            item.status = "error"
            item.error = f"extraction failed: {global_object_name(type(exc))}: {exc}"
            return item, None
        if self.max_text and item.text and len(item.text) > self.max_text:
            item.text = item.text[: self.max_text]
        if directives.noindex:
            item.status, item.noindex, item.text = "noindex", True, None
        elif self.store_body:
            item.body = response.body[: self.body_maxsize]
            item.body_truncated = len(response.body) > self.body_maxsize
        return item, page

    def unchanged(self, response: Response) -> PageItem:
        """The row of a 304 Not Modified: the visit only, the stored copy stays as it is."""
        item = self.base(response.request, "unchanged")
        item.http_status = response.status
        latency: Any = response.meta.get("download_latency")
        item.crawl_duration_ms = round(latency * 1000) if latency is not None else None
        return item

    def _extract(self, response: TextResponse, budget: Budget) -> tuple[PageData, int | None]:
        """What the page says, and the SimHash of its text (on the reactor or in a document
        thread, within ``budget``; the resolver's cache is safe to share)."""
        html = _utf8_document(response)
        self.workers.check_shape(html, budget)
        page = extract_page(
            html,
            response.url,
            self.normalize,
            self.user_agents,
            self.resolver,
            self.max_links,
            budget.seconds,
            budget.most_anchors,
        )
        text, page.utf8 = page.utf8, b""  # not kept with the page
        return page, simhash_of_utf8(text) if self.fingerprint else None

    def close(self) -> None:
        self.workers.close()

    def failed(self, failure: Failure, request: Request) -> PageItem:
        item = self.base(request, "error")
        error = failure.value
        if isinstance(error, HttpError):
            self._describe_response(item, error.response)
            item.error = f"HTTP {error.response.status}"
            item.site_failure = error.response.status >= 500
        elif isinstance(error, ResponseFiltered):
            item = self.filtered(request, str(error))
            if error.response is not None:
                self._describe_response(item, error.response, request)
        elif isinstance(error, RobotsUnreachable):
            item.error = str(error)
            item.site_failure = True
        elif isinstance(error, BlockedByPolicy):
            item.status = "blocked_by_policy"
            item.error = str(error)
        elif isinstance(error, RedirectFailed):
            item.error = str(error)
        elif isinstance(error, NotSent):
            item = self.skipped(request, str(error))
        elif isinstance(error, IgnoreRequest) and "robots.txt" in str(error):
            item.status = "blocked_by_robots"
            item.error = str(error)
        elif isinstance(error, DownloadCancelledError) and not str(error):
            # Scrapy cancels a streamed body past the size limit without a message.
            limit = request.meta.get("download_maxsize", self.download_maxsize)
            item.error = f"response body larger than the size limit of {limit} bytes"
        else:
            item.error = describe(error) or f"{global_object_name(failure.type)}: {error}".rstrip(": ")
            item.site_failure = is_site_failure(error)
            if item.site_failure:
                item.error = through_proxy(item.error, request.meta)
        return item

    def filtered(self, request: Request, reason: str) -> PageItem:
        """The row of a URL the crawl does not keep, fetched or not."""
        item = self.base(request, "filtered")
        item.error = reason
        return item

    def skipped(self, request: Request, reason: str) -> PageItem:
        """The row of a URL the crawl found but does not fetch now."""
        item = self.base(request, "skipped")
        item.error = reason
        return item

    def sitemap(self, response: Response, entries: int, problems: list[str]) -> PageItem:
        item = self.base(response.request, "sitemap")
        self._describe_response(item, response)
        item.links_count = entries
        if problems:
            item.error = _summary(problems)
        return item

    def sitemap_unreadable(self, response: Response, reason: str) -> PageItem:
        item = self.base(response.request, "error")
        self._describe_response(item, response)
        item.error = f"sitemap: {reason}"
        return item

    def redirected_to_seen(self, request: Request) -> PageItem:
        chain = request.meta.get("redirect_urls", ())
        looped = request.url in chain
        item = self.base(request, "error" if looped else "redirect")
        item.final_url = request.url
        item.redirect_count = len(chain)
        item.error = (
            f"redirect loop: {' -> '.join([*chain, request.url])}"
            if looped
            else "redirected to a URL already crawled under its own row"
        )
        return item

    def _describe_response(self, item: PageItem, response: Response, request: Request | None = None) -> None:
        # A middleware's exception carries a response not yet tied to its request.
        meta = (request or response.request).meta
        item.http_status = response.status
        item.content_type = media_type(response)
        item.content_length = len(response.body)
        item.final_url = response.url
        item.redirect_count = len(meta.get("redirect_urls", ()))
        item.etag = header(response, "ETag")
        item.last_modified = header(response, "Last-Modified")
        item.server_date = http_date(header(response, "Date"))
        latency: Any = meta.get("download_latency")
        item.crawl_duration_ms = round(latency * 1000) if latency is not None else None
        if (archived := archived_in(meta)) is not None:
            item.warc_filename, item.warc_offset = archived.filename, archived.offset
            item.warc_payload_digest = archived.payload_digest


def _utf8_document(response: TextResponse) -> bytes:
    """The document in UTF-8, as lexbor reads it: the body itself when it is UTF-8 already (most
    pages: decoding it for lexbor to encode it again costs more than the parse needs), without
    its byte order mark; otherwise the text Scrapy decodes, encoded."""
    body = response.body
    bom_encoding, bom = read_bom(body)
    if bom_encoding == "utf-8" or (bom_encoding is None and codecs.lookup(response.encoding).name == "utf-8"):
        return body[len(bom or b"") :]
    return response.text.encode("utf-8", "replace")


def _squashed_text(response: TextResponse) -> str:
    return " ".join(response.text.split())


def _summary(problems: list[str], shown: int = 5) -> str:
    more = f" (and {len(problems) - shown} more)" if len(problems) > shown else ""
    return "; ".join(problems[:shown]) + more

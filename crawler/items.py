"""Items: one row of ``pages`` and one row of ``sitemap_entries``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(slots=True)
class PageItem:
    """The outcome for one URL accepted into the frontier.

    ``status`` says what happened: ``fetched``, ``noindex`` (kept without body and text),
    ``unchanged`` (answered 304 Not Modified, or fetched with the same text: the stored content
    is kept), ``duplicate`` (says what a page of its site fetched before says: ``duplicate_of``),
    ``sitemap`` (a sitemap document), ``redirect`` (redirected to a URL fetched under its
    own row), ``blocked_by_policy`` (refused by the address guard or the redirect checks) or
    ``error`` (``error`` says why).
    """

    url: str
    url_hash: str
    surt_key: str
    domain: str
    status: str
    crawled_at: datetime
    http_status: int | None = None
    content_type: str | None = None
    content_length: int | None = None
    content_hash: str | None = None
    simhash: str | None = None
    """The SimHash of the visible text (``crawler.twins.simhash``), 16 hex digits."""
    duplicate_of: str | None = None
    title: str | None = None
    description: str | None = None
    text: str | None = None
    body: bytes | None = None
    body_truncated: bool = False
    noindex: bool = False
    links_count: int = 0
    links: str | None = None
    final_url: str | None = None
    redirect_count: int = 0
    etag: str | None = None
    last_modified: str | None = None
    server_date: datetime | None = None
    crawl_duration_ms: int | None = None
    error: str | None = None
    depth: int = 0
    priority: int = 0
    discovered_via: str | None = None
    referrer: str | None = None
    sitemap_lastmod: datetime | None = None
    sitemap_changefreq: str | None = None
    sitemap_priority: float | None = None
    job_id: str | None = None
    site_failure: bool = False
    """Not stored: the site failed to answer (transport error, timeout, 5xx), which the job
    failure threshold counts; a 404 or a refusal by the crawl's own rules is not."""
    next_crawl_at: datetime | None = None
    """When the page is due again (``crawler.recrawl.schedule``); None: at the next crawl."""
    recrawl_interval_seconds: float | None = None
    visit_count: int = 0
    """Visits that got an answer (fetched or unchanged), for the change-rate estimate."""
    change_count: int = 0
    """Of those, the visits that found the page changed."""
    followed_links: str | None = None
    """The links the crawl follows from the page (JSON) where they differ from ``links``
    (``rel=nofollow``, a ``nofollow`` directive, the per-page cap, the canonical URL); they are
    followed again from storage when the page is not downloaded again."""
    warc_filename: str | None = None
    """The WARC file (in ``CRAWLER_WARC_DIR``) of the response or revisit record of the copy."""
    warc_offset: int | None = None
    """Where that record starts in the file (its gzip member), as a CDXJ index says."""
    warc_payload_digest: str | None = None
    """``WARC-Payload-Digest`` of the copy's payload as received (``sha1:`` and base 32)."""


@dataclass(slots=True)
class SitemapEntryItem:
    sitemap_url: str
    url: str
    url_hash: str
    lastmod: datetime | None
    changefreq: str | None
    priority: float | None
    job_id: str | None
    discovered_at: datetime

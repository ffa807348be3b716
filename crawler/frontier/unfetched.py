"""Rows for requests the frontier will not hand out: a ``skipped`` row for every URL a job
leaves queued when it ends early, an ``error`` row for one that cannot be read back."""

from __future__ import annotations

from collections.abc import Iterable

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings

from crawler.services import CrawlServices
from crawler.storage.rows import page_row

CHUNK = 1_000
"""Skipped rows written at a time."""


def unfetched_reason(reason: str, settings: BaseSettings) -> str:
    """Why a URL the job accepted was not fetched, for its ``skipped`` row: a budget spent (the
    spider's ``max_pages``, Scrapy's ``closespider_timeout`` for ``max_time``) or another early end."""
    if reason == "max_pages":
        return f"not fetched: the max_pages budget ({settings.getint('CRAWLER_MAX_PAGES')} downloads) was spent"
    if reason == "closespider_timeout":
        return f"not fetched: the max_time budget ({settings.getfloat('CLOSESPIDER_TIMEOUT'):g} s) was spent"
    return f"not fetched: the job ended early ({reason})"


def record_outcome(crawler: Crawler, request: Request, status: str, error: str) -> None:
    """A row for ``request`` with ``status`` and the reason, written with the next batch."""
    storage = CrawlServices.of(crawler).open_storage
    recorder = getattr(crawler.spider, "recorder", None)
    if storage is None or recorder is None:
        return
    item = recorder.base(request, status)
    item.error = error
    storage.outbox.new_pages.append(page_row(item))
    crawler.stats.inc_value(f"pages/status/{status}")


async def record_unfetched(crawler: Crawler, requests: Iterable[Request], reason: str) -> None:
    """``skipped`` rows for ``requests``, written every ``CHUNK`` rows: a large frontier left
    at an early stop is never all in memory as rows."""
    storage = CrawlServices.of(crawler).open_storage
    why = unfetched_reason(reason, crawler.settings)
    for count, request in enumerate(requests, 1):
        if not request.meta.get("dont_obey_robotstxt"):  # not a spider's own robots.txt request
            record_outcome(crawler, request, "skipped", why)
        if count % CHUNK == 0 and storage is not None and storage.flush is not None:
            await storage.flush()

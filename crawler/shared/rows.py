"""Rows for URLs the shared frontier could not hand out as requests."""

from __future__ import annotations

import logging

from scrapy import Request
from scrapy.crawler import Crawler

from crawler.pipelines.rows import page_row
from crawler.storage.shared import shared_storage

logger = logging.getLogger(__name__)


def record_error(crawler: Crawler, url: str, reason: str) -> None:
    """An ``error`` row for ``url`` saying why, written with the next batch."""
    storage = shared_storage(crawler)
    recorder = getattr(crawler.spider, "recorder", None)
    if storage is None or recorder is None:
        return
    try:
        item = recorder.base(Request(url), "error")
    except ValueError:
        logger.error("No row for %r: not a URL (%s)", url, reason)
        return
    item.error = reason
    storage.outbox.new_pages.append(page_row(item))

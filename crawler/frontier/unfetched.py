"""A ``skipped`` row for every URL a job leaves in its frontier when it ends early."""

from __future__ import annotations

from collections.abc import Iterable

from scrapy import Request
from scrapy.crawler import Crawler

from crawler.pipelines.rows import page_row
from crawler.storage.shared import shared_storage


def record_unfetched(crawler: Crawler, requests: Iterable[Request], reason: str) -> None:
    storage = shared_storage(crawler)
    recorder = getattr(crawler.spider, "recorder", None)
    if storage is None or recorder is None:
        return
    for request in requests:
        if request.meta.get("dont_obey_robotstxt"):  # a spider's own robots.txt request
            continue
        item = recorder.base(request, "skipped")
        item.error = f"not fetched: the job ended early ({reason})"
        storage.outbox.new_pages.append(page_row(item))
        crawler.stats.inc_value("pages/status/skipped")

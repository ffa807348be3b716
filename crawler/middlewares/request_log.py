"""One ``request_log`` row per request that left for the network: when it left, when it
ended, its status or error, and the domain's delay in force; the evidence of ``scrapy audit``.

The start is ``request.meta[SENT_AT]``: stamped here as the request goes to the download
handler, and again by the HTTP/1.1 handler when its bytes left (the time the limiter counts the
domain's spacing from). Placed under the limiter middleware, so on the way back the delay in
force of a departure the handler did not see is settled first, and above the redirect and retry
middlewares, so every answer and error is seen as it comes off the wire. Rows go with the storage
pipeline's batches; ``CRAWLER_REQUEST_LOG`` turns the log off.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Self

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response

from crawler.control.worker import worker_id
from crawler.exceptions import NotSent
from crawler.politeness.slots import DELAY_IN_FORCE, SENT_AT, domain_key
from crawler.robots.service import CACHED_RESPONSE_FLAG
from crawler.services import CrawlServices

RESPONSE = "response"
"""The outcome of a request answered over HTTP; other outcomes name the error."""


class RequestLogMiddleware:
    def __init__(self, crawler: Crawler):
        self.crawler = crawler
        self.services = CrawlServices.of(crawler)
        self._job: tuple[str | None, str | None] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.getbool("CRAWLER_REQUEST_LOG"):
            raise NotConfigured
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        request.meta[SENT_AT] = time.time()  # the handler stamps it again when the bytes leave

    def process_response(self, request: Request, response: Response) -> Response:
        if CACHED_RESPONSE_FLAG in response.flags:  # served from memory: nothing left
            _forget_stamps(request)
        else:
            self._log(request, response.status, RESPONSE)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        if isinstance(exception, NotSent):  # held at the departure gate until the job ended
            _forget_stamps(request)
            return
        self._log(request, None, type(exception).__name__)

    def _log(self, request: Request, status: int | None, outcome: str) -> None:
        # Popped, so that a retry or redirect built from this request gets a stamp of its own.
        started = request.meta.pop(SENT_AT, None)
        delay = request.meta.pop(DELAY_IN_FORCE, None)
        storage = self.services.open_storage
        if started is None or storage is None:
            return  # dropped before it left (robots.txt, a filter), or no storage
        if self._job is None:
            job_id = getattr(self.crawler.spider, "job_id", None)
            self._job = (job_id, worker_id(job_id) if job_id else None)
        storage.outbox.observed.request_log.append(
            (
                domain_key(request),
                request.url,
                *self._job,
                datetime.fromtimestamp(started, UTC),
                datetime.now(UTC),
                status,
                outcome,
                delay,
            )
        )


def _forget_stamps(request: Request) -> None:
    """A request that never left: no row of the request log."""
    request.meta.pop(SENT_AT, None)
    request.meta.pop(DELAY_IN_FORCE, None)

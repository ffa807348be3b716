"""Retries with backoff, never by sleeping: the retry request carries a ``not_before`` time and
waits in the frontier.

Built on Scrapy's ``RetryMiddleware`` and ``get_retry_request`` (retry counts, stats, give-up
logging, ``dont_retry`` and ``max_retry_times``). What it adds: 429 and every 5xx are retried
(other 4xx are final), and so are failures that may pass (timeouts, refused or reset
connections), never protocol or TLS errors (a reply that is not HTTP, a TLS handshake with a
plain-HTTP port), which are final at once; the n-th retry waits Fibonacci(n) seconds (1, 1, 2,
3, 5, 8 …) capped at ``CRAWLER_RETRY_BACKOFF_CAP``, and ``Retry-After`` wins when the server
sends one.
"""

from __future__ import annotations

from typing import Self

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.retry import RetryMiddleware
from scrapy.http import Response
from scrapy.utils.response import response_status_message

from crawler.compat import retry_request
from crawler.frontier.meta import NOT_BEFORE
from crawler.http.failures import is_final
from crawler.http.headers import retry_after
from crawler.politeness.limiter_local import DomainLimiter
from crawler.politeness.policy import fibonacci
from crawler.services import CrawlServices


class BackoffRetryMiddleware(RetryMiddleware):
    limiter: DomainLimiter

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        middleware = super().from_crawler(crawler)
        middleware.limiter = CrawlServices.of(crawler).limiter
        middleware.backoff_cap = crawler.settings.getfloat("CRAWLER_RETRY_BACKOFF_CAP")
        return middleware

    def process_response(self, request: Request, response: Response) -> Request | Response:
        if request.meta.get("dont_retry", False):
            return response
        if response.status == 429 or response.status >= 500:
            wait = retry_after(response, self.limiter.clock())
            return self._backoff(request, response_status_message(response.status), wait) or response
        return response

    def process_exception(self, request: Request, exception: Exception) -> Request | None:
        if not isinstance(exception, self.exceptions_to_retry) or request.meta.get("dont_retry", False):
            return None
        if is_final(exception):
            self.crawler.stats.inc_value("retry/final_at_once")
            return None
        return self._backoff(request, exception, None)

    def _backoff(self, request: Request, reason: str | Exception, retry_after: float | None) -> Request | None:
        retry = retry_request(self, request, reason)
        if retry is None:
            return None
        wait = retry_after if retry_after is not None else float(fibonacci(retry.meta["retry_times"]))
        retry.meta[NOT_BEFORE] = self.limiter.clock() + min(wait, self.backoff_cap)
        return retry

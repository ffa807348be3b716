"""Retries wait in the frontier with Fibonacci backoff; Retry-After wins."""

from __future__ import annotations

from scrapy import Request, Spider
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from crawler.frontier.meta import NOT_BEFORE
from crawler.middlewares.retry import BackoffRetryMiddleware
from crawler.services import CrawlServices
from tests.helpers import project_settings


def _middleware(**settings):
    crawler = get_crawler(Spider, project_settings(**settings))
    crawler.spider = Spider.from_crawler(crawler, "test")
    middleware = BackoffRetryMiddleware.from_crawler(crawler)
    clock = [1000.0]
    CrawlServices.of(crawler).limiter.clock = lambda: clock[0]
    return middleware, clock, crawler


def test_fibonacci_backoff_then_give_up() -> None:
    middleware, clock, crawler = _middleware()
    request = Request("http://e.example/a")
    waits = []
    for _ in range(6):
        result = middleware.process_response(request, Response(request.url, status=503, request=request))
        if isinstance(result, Response):
            break
        waits.append(result.meta[NOT_BEFORE] - clock[0])
        request = result
    assert waits == [1, 1, 2, 3, 5]  # RETRY_TIMES = 5, then the 503 is final
    assert crawler.stats.get_value("retry/max_reached") == 1


def test_retry_after_wins_and_is_capped() -> None:
    middleware, clock, _ = _middleware(CRAWLER_RETRY_BACKOFF_CAP=600)
    request = Request("http://e.example/a")
    retry = middleware.process_response(
        request, Response(request.url, status=429, headers={"Retry-After": "7"}, request=request)
    )
    assert retry.meta[NOT_BEFORE] == clock[0] + 7
    retry = middleware.process_response(
        request, Response(request.url, status=429, headers={"Retry-After": "99999"}, request=request)
    )
    assert retry.meta[NOT_BEFORE] == clock[0] + 600


def test_other_4xx_are_final_and_network_errors_are_retried() -> None:
    middleware, clock, _ = _middleware()
    request = Request("http://e.example/a")
    for status in (400, 403, 404, 410):
        response = Response(request.url, status=status, request=request)
        assert middleware.process_response(request, response) is response
    for status in (500, 502, 520, 599):
        assert isinstance(
            middleware.process_response(request, Response(request.url, status=status, request=request)), Request
        )
    from twisted.internet.error import ConnectionRefusedError

    retry = middleware.process_exception(request, ConnectionRefusedError())
    assert retry is not None and retry.meta[NOT_BEFORE] == clock[0] + 1


def test_dont_retry_is_respected() -> None:
    middleware, _, _ = _middleware()
    request = Request("http://e.example/a", meta={"dont_retry": True})
    response = Response(request.url, status=503, request=request)
    assert middleware.process_response(request, response) is response

"""Which failures are retried, which count against a domain or a job, and how they are said."""

from __future__ import annotations

from typing import Any

import pytest
from OpenSSL.SSL import Error as TLSError
from scrapy import Request, Spider
from scrapy.exceptions import DownloadCancelledError, DownloadFailedError, DownloadTimeoutError, IgnoreRequest
from scrapy.http import Response
from scrapy.utils.test import get_crawler
from twisted.internet.error import ConnectionDone, ConnectionLost
from twisted.python.failure import Failure
from twisted.web._newclient import ParseError, ResponseNeverReceived
from twisted.web.client import ResponseFailed

from crawler.extensions.job_health import FAILED, JobHealth
from crawler.http.failures import describe, is_final, is_site_failure
from crawler.http.header_limits import HeadersTooLarge
from crawler.items import PageItem
from crawler.middlewares.limiter import LimiterMiddleware
from crawler.middlewares.retry import BackoffRetryMiddleware
from crawler.politeness.policy import Outcome
from crawler.politeness.slots import DELAY_IN_FORCE, DOMAIN, SENT_AT
from crawler.services import CrawlServices
from crawler.signals import domain_blocked
from tests.helpers import project_settings


def _download_failed(*reasons: BaseException, never: bool = False) -> DownloadFailedError:
    """What Scrapy's HTTP/1.1 handler raises for a response Twisted could not read."""
    cause = (ResponseNeverReceived if never else ResponseFailed)([Failure(reason) for reason in reasons])
    error = DownloadFailedError(str(cause))
    error.__cause__ = cause
    return error


TLS_HANDSHAKE_WITH_PLAIN_HTTP = TLSError([("SSL routines", "", "wrong version number")])


@pytest.mark.parametrize(
    "exception",
    [
        _download_failed(ParseError("wrong number of parts", b"SSH-2.0-OpenSSH_9.6")),
        _download_failed(HeadersTooLarge("response headers larger than 10 bytes")),
        _download_failed(TLS_HANDSHAKE_WITH_PLAIN_HTTP, never=True),
    ],
)
def test_protocol_and_tls_errors_are_final(exception: Exception) -> None:
    assert is_final(exception)
    assert is_site_failure(exception)


@pytest.mark.parametrize(
    "exception",
    [
        _download_failed(ConnectionLost()),
        _download_failed(ConnectionDone(), never=True),
        DownloadTimeoutError("took longer than 3 s"),
    ],
)
def test_resets_hang_ups_and_timeouts_may_pass(exception: Exception) -> None:
    assert not is_final(exception)
    assert is_site_failure(exception)


def test_transport_errors_are_said_plainly() -> None:
    assert (
        describe(_download_failed(ConnectionDone(), never=True))
        == "no response: ConnectionDone: Connection was closed cleanly."
    )
    assert describe(_download_failed(ConnectionLost())).startswith("response cut off: ConnectionLost: ")
    assert describe(DownloadTimeoutError("took longer than 3 s")) is None


def test_final_errors_are_said_plainly() -> None:
    assert describe(_download_failed(ParseError("wrong number of parts", b"SSH-2.0"))) == (
        "not an HTTP response: ParseError: wrong number of parts b'SSH-2.0'"
    )
    assert describe(_download_failed(TLS_HANDSHAKE_WITH_PLAIN_HTTP, never=True)) == "TLS error: wrong version number"
    assert (
        describe(_download_failed(HeadersTooLarge("more than 5 response header lines")))
        == "more than 5 response header lines"
    )


def test_a_request_dropped_on_purpose_is_not_a_site_failure() -> None:
    assert not is_site_failure(IgnoreRequest("Forbidden by robots.txt"))
    assert not is_site_failure(
        DownloadCancelledError("Expected to receive 52428826 bytes which is larger than download max size")
    )


def _crawler(**settings: Any):
    crawler = get_crawler(Spider, project_settings(**settings))
    crawler.spider = Spider.from_crawler(crawler, "test")
    return crawler


def test_final_errors_are_not_retried_and_the_others_are() -> None:
    crawler = _crawler()
    middleware = BackoffRetryMiddleware.from_crawler(crawler)
    request = Request("http://e.example/a")
    assert middleware.process_exception(request, _download_failed(ParseError("wrong number of parts", b"x"))) is None
    assert middleware.process_exception(request, _download_failed(TLS_HANDSHAKE_WITH_PLAIN_HTTP, never=True)) is None
    assert crawler.stats.get_value("retry/final_at_once") == 2
    assert isinstance(middleware.process_exception(request, _download_failed(ConnectionLost())), Request)


def _answer(
    middleware: LimiterMiddleware, status: int, headers: dict[str, str] | None = None, sent_at: float | None = None
) -> None:
    """An answer of e.example; ``sent_at``: when its request left, as the handler stamps it."""
    meta: dict[str, Any] = {DOMAIN: "e.example"}
    if sent_at is not None:
        meta |= {SENT_AT: sent_at, DELAY_IN_FORCE: 0.0}
    request = Request("http://e.example/a", meta=meta)
    middleware.process_response(request, Response(request.url, status=status, headers=headers, request=request))


def test_a_403_streak_opens_the_circuit_without_blocking_or_slowing_the_domain() -> None:
    crawler = _crawler()
    middleware = LimiterMiddleware.from_crawler(crawler)
    limiter = CrawlServices.of(crawler).limiter
    for _ in range(4):
        _answer(middleware, 403)
    state = limiter.state("e.example")
    assert state.circuit_open_until is None and state.failure_streak == 4
    _answer(middleware, 403)
    assert state.circuit_open_until is not None  # the fifth in a row opens it
    assert state.learned_delay == 0 and state.blocked_until == 0 and state.blocking_streak == 0


def test_404_and_410_are_answers_for_pacing() -> None:
    crawler = _crawler()
    middleware = LimiterMiddleware.from_crawler(crawler)
    state = CrawlServices.of(crawler).limiter.state("e.example")
    for status in (403, 403, 404, 410, 400):
        _answer(middleware, status)
    assert state.failure_streak == 0 and state.blocked_until == 0 and state.learned_delay == 0
    assert state.success_streak == 3


def test_block_statuses_are_a_setting_and_503_blocks_only_with_retry_after() -> None:
    crawler = _crawler()
    middleware = LimiterMiddleware.from_crawler(crawler)
    state = CrawlServices.of(crawler).limiter.state("e.example")
    _answer(middleware, 503)
    assert state.blocked_until == 0 and state.learned_delay == 0 and state.failure_streak == 1
    _answer(middleware, 503, {"Retry-After": "30"})
    assert state.blocked_until > 0 and state.learned_delay > 0
    other = _crawler(CRAWLER_BLOCK_STATUSES=[429, 418])
    middleware = LimiterMiddleware.from_crawler(other)
    _answer(middleware, 418)
    assert CrawlServices.of(other).limiter.state("e.example").blocked_until > 0


def test_every_refusal_signals_a_block_and_a_refusal_again_says_how_long_it_holds_it() -> None:
    crawler = _crawler()
    middleware = LimiterMiddleware.from_crawler(crawler)
    limiter = CrawlServices.of(crawler).limiter
    signalled: list[Outcome] = []

    def blocked(domain: str, outcome: Outcome) -> None:
        signalled.append(outcome)

    crawler.signals.connect(blocked, signal=domain_blocked)
    on_its_way = limiter.clock() - 1  # left before any refusal was read
    _answer(middleware, 429, {"Retry-After": "0"})  # a refusal, even one that blocks for no time
    _answer(middleware, 429, {"Retry-After": "1"}, sent_at=on_its_way)  # the same refusal, blocking longer
    _answer(middleware, 429, {"Retry-After": "0"}, sent_at=on_its_way)  # the same refusal, nothing more
    assert [(outcome.again, outcome.block > 0) for outcome in signalled] == [
        (False, False),
        (True, True),
        (True, False),
    ]
    assert signalled[1].block == pytest.approx(1.0, abs=0.1)
    assert crawler.stats.get_value("limiter/block_again_count") == 2
    assert crawler.stats.get_value("limiter/block_count") is None  # the one block was of no time
    assert limiter.state("e.example").blocking_streak == 1


def _row(status: str, site_failure: bool = False) -> PageItem:
    from datetime import UTC, datetime

    return PageItem("u", "h", "s", "d", status, datetime.now(UTC), site_failure=site_failure)


def test_the_job_failure_threshold_counts_site_failures_only() -> None:
    crawler = _crawler(CRAWLER_JOB_FAILURE_THRESHOLD=3)
    health = JobHealth(crawler)
    closed: list[str] = []
    health._close = lambda reason, why: closed.append(reason)  # type: ignore[method-assign]
    for _ in range(50):
        health.item_scraped(_row("error"))  # 404s, redirect loops, refusals
    assert health.streak == 0 and closed == []
    health.item_scraped(_row("error", site_failure=True))
    health.item_scraped(_row("error", site_failure=True))
    health.item_scraped(_row("error"))  # a 404 between two failures does not reset the streak
    assert health.streak == 2
    health.item_scraped(_row("error", site_failure=True))
    assert closed == [FAILED]

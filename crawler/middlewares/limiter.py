"""Record each outcome with the domain limiter: success (and latency), the blocking answers
(``CRAWLER_BLOCK_STATUSES``, default 429, and ``CRAWLER_BLOCK_STATUSES_WITH_RETRY_AFTER``,
default 503, when they carry ``Retry-After``), failures for the circuit breaker (5xx, 403,
connection errors, timeouts; not protocol or TLS errors, which are final and say nothing of
the site's load), and release the slot the frontier reserved. Other 4xx are answers: successes
for pacing.

The domain's next slot counts from when the request's bytes left, which the download handler
tells the limiter (``crawler.download.handler``, which also records the delay in force); a
request that comes back without that stamp (another download handler, a connection that failed
before it was written) counts from its return, never earlier than it left. Placed above the
redirect and retry middlewares, so it sees every response as it comes off the wire, before they
turn it into a new request. Learned delays are loaded from the ``domains`` table when the spider
opens and saved there when they change.
"""

from __future__ import annotations

import logging
from typing import Self

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Response

from crawler.http.failures import is_final
from crawler.http.headers import retry_after
from crawler.politeness.limiter_local import DomainLimiter
from crawler.politeness.policy import Change, Outcome
from crawler.politeness.slots import DELAY_IN_FORCE, DOMAIN, HOLDER, RESERVATION, SENT_AT
from crawler.robots.service import CACHED_RESPONSE_FLAG
from crawler.services import CrawlServices
from crawler.signals import domain_blocked
from crawler.storage.domains import learned_delays
from crawler.storage.rows import domain_row

logger = logging.getLogger(__name__)

CIRCUIT_STATUSES = frozenset({403})
"""Answers that count as failures for the domain's circuit: a run of 403s opens it, without
blocking the domain or raising its learned delay."""


class LimiterMiddleware:
    def __init__(self, crawler: Crawler, limiter: DomainLimiter):
        self.crawler = crawler
        self.services = CrawlServices.of(crawler)
        self.limiter = limiter
        self.stats = crawler.stats
        settings = crawler.settings
        self.block_statuses = frozenset(int(s) for s in settings.getlist("CRAWLER_BLOCK_STATUSES"))
        self.block_with_retry_after = frozenset(
            int(s) for s in settings.getlist("CRAWLER_BLOCK_STATUSES_WITH_RETRY_AFTER")
        )
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.getbool("CRAWLER_LIMITER_ENABLED"):
            raise NotConfigured
        return cls(crawler, CrawlServices.of(crawler).limiter)

    async def spider_opened(self) -> None:
        storage = self.services.open_storage
        if storage is None:
            return
        rows = await learned_delays(storage.backend)
        for domain, delay, floor in rows:
            self.limiter.learned(domain, delay, floor)
        if rows:
            logger.info("Loaded learned delays of %d domains", len(rows))

    def process_request(self, request: Request) -> None:
        # A retry or a redirect carries its parent's stamp: it is stamped again when it leaves.
        request.meta.pop(DELAY_IN_FORCE, None)

    def process_response(self, request: Request, response: Response) -> Response:
        domain = request.meta.pop(DOMAIN, None)
        reservation = request.meta.pop(RESERVATION, None)
        holder = request.meta.pop(HOLDER, "")
        if domain is None:
            return response
        if CACHED_RESPONSE_FLAG in response.flags:
            self.limiter.finish(domain, holder)
            if reservation is not None:
                self.limiter.unreserve(domain, reservation)
            return response
        # The handler's stamp of when the bytes left, if it saw them leave (the request log's
        # earlier one is no departure)
        sent_at = request.meta.get(SENT_AT) if DELAY_IN_FORCE in request.meta else None
        self._settle_departure(request, domain)
        failed = response.status >= 500 or response.status in CIRCUIT_STATUSES
        if failed:
            self._failed(domain, f"HTTP {response.status}")
        wait = retry_after(response, self.limiter.clock())
        if response.status in self.block_statuses or (
            wait is not None and response.status in self.block_with_retry_after
        ):
            self.stats.inc_value(f"limiter/blocking_response_count/{response.status}")
            outcome = self.limiter.blocked(domain, wait, sent_at)
            if outcome.again:
                self._refused_again(domain, outcome, response.status)
            else:
                self._changed(domain, outcome, f"HTTP {response.status}")
            # Every refusal, again or not: in a shared crawl, this process may read of the block only
            # now, and its requests of the domain popped ahead go back (``RedisFrontierQueue``).
            self.crawler.signals.send_catch_log(domain_blocked, domain=domain, outcome=outcome)
        elif not failed:  # an answer, even a 404, is a success for pacing
            outcome = self.limiter.success(domain, request.meta.get("download_latency"), sent_at)
            if outcome.pacing_changed:
                self._changed(domain, outcome, "success")
        # The slot is given back last: in a shared crawl, the block reaches Redis before the
        # release, so no process is handed the domain's next request in between.
        self.limiter.finish(domain, holder)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        domain = request.meta.pop(DOMAIN, None)
        reservation = request.meta.pop(RESERVATION, None)
        holder = request.meta.pop(HOLDER, "")
        if domain is None:
            return
        if isinstance(exception, IgnoreRequest):
            # Dropped before reaching the network (robots.txt, a filter): the slot was not used.
            self.limiter.finish(domain, holder)
            if reservation is not None:
                self.limiter.unreserve(domain, reservation)
        else:
            self._settle_departure(request, domain)
            if not is_final(exception):
                self._failed(domain, type(exception).__name__)
            self.limiter.finish(domain, holder)

    def _settle_departure(self, request: Request, domain: str) -> None:
        if DELAY_IN_FORCE not in request.meta:
            # Its departure went unnoticed (another handler, a connection that failed before
            # the write): count from now, never earlier.
            self.stats.inc_value("limiter/unstamped_count")
            request.meta[DELAY_IN_FORCE] = self.limiter.sent(domain)

    def _failed(self, domain: str, cause: str) -> None:
        if self.limiter.failure(domain):
            self.stats.inc_value("limiter/circuit_open_count")
            logger.info(
                "Circuit of %s open after %s (%d consecutive failures): one probe after %.0f s",
                domain,
                cause,
                self.limiter.state(domain).failure_streak,
                self.limiter.policy.config.circuit_open_seconds,
            )

    def _refused_again(self, domain: str, outcome: Outcome, status: int) -> None:
        self.stats.inc_value("limiter/block_again_count")
        if outcome.block:
            level, what = logging.INFO, f"whose Retry-After blocks it {outcome.block:.1f} s from now"
        else:
            level, what = logging.DEBUG, "nothing changes"
        logger.log(
            level,
            "Pacing of %s after HTTP %d to a request sent before the block was read: the same refusal, %s",
            domain,
            status,
            what,
        )

    def _changed(self, domain: str, outcome: Outcome, cause: str) -> None:
        stats = self.stats
        if outcome.block:
            stats.inc_value("limiter/block_count")
        if outcome.change is Change.INCREASED:
            stats.inc_value("limiter/delay_increase_count")
        elif outcome.change is Change.PROBED:
            stats.inc_value("limiter/probe_count")
        elif outcome.change is Change.REVERTED:
            stats.inc_value("limiter/probe_reverted_count")
        if outcome.concurrency_before != outcome.concurrency_after:
            stats.inc_value("limiter/concurrency_change_count")
        state = self.limiter.state(domain)
        # A delay that follows the latency (CRAWLER_LATENCY_FACTOR) moves with nearly every answer:
        # only what the policy decided (a block, an increase, a probe, a concurrency step) is news.
        decided = (
            outcome.change is not Change.NONE
            or outcome.block
            or outcome.concurrency_before != outcome.concurrency_after
        )
        logger.log(
            logging.INFO if decided else logging.DEBUG,
            "Pacing of %s after %s: delay %.3f -> %.3f s, concurrency %d -> %d, blocked %.1f s, streak %d",
            domain,
            cause,
            outcome.delay_before,
            outcome.delay_after,
            outcome.concurrency_before,
            outcome.concurrency_after,
            outcome.block,
            state.blocking_streak,
        )
        if outcome.change is not Change.NONE:
            self._persist(domain)

    def _persist(self, domain: str) -> None:
        storage = self.services.open_storage
        if storage is None:
            return
        state = self.limiter.state(domain)
        storage.outbox.domains[domain] = domain_row(domain, state.learned_delay, state.floor, state.robots_delay)

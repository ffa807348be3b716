"""End a job that is going nowhere.

- ``CRAWLER_JOB_FAILURE_THRESHOLD`` consecutive pages the sites failed to answer (transport
  errors, timeouts, 5xx; default 20; 0 turns it off) fail the job: the spider closes with reason
  ``failed_consecutive_errors`` and the job is marked failed. A fetched page resets the streak; a
  404 or another final 4xx is an outcome of the crawl, not a failure of it, and leaves the streak
  as it is.
- ``CRAWLER_CANCEL_429_STREAK`` consecutive refusals (blocking answers, ``CRAWLER_BLOCK_STATUSES``; those to
  requests on their way at once count as one: the limiter's blocking streak) from
  one domain while its delay is at ``CRAWLER_MAX_DELAY`` (default 0: off) cancel the job with
  reason ``cancelled_429_streak``.
- A job that ends without a single answer from any server, with error rows (every seed
  unreachable: connection refused, DNS failure, timeouts, TLS errors) closes with reason
  ``failed_seeds_unreachable``; its line gives the first error row's URL and reason, and a hint
  when that reason is a TLS error (a seed without a scheme means https://, which a plain-HTTP
  port answers with ``wrong version number``).
"""

from __future__ import annotations

import logging
from typing import Any, Self
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider
from scrapy.utils.defer import deferred_from_coro

from crawler.exitcodes import REASON_SEEDS_UNREACHABLE
from crawler.items import PageItem
from crawler.politeness.policy import Outcome
from crawler.services import CrawlServices
from crawler.signals import domain_blocked
from crawler.storage.jobs import FETCHED_STATUSES

logger = logging.getLogger(__name__)

FAILED = "failed_consecutive_errors"
CANCELLED_429 = "cancelled_429_streak"


class JobHealth:
    def __init__(self, crawler: Crawler):
        self.crawler = crawler
        self.threshold = crawler.settings.getint("CRAWLER_JOB_FAILURE_THRESHOLD")
        self.cancel_streak = crawler.settings.getint("CRAWLER_CANCEL_429_STREAK")
        self.limiter = CrawlServices.of(crawler).limiter
        self.streak = 0
        self.site_failures = 0
        self.first_failure: PageItem | None = None
        self.closing = False
        crawler.signals.connect(self.item_scraped, signal=signals.item_scraped)
        if self.cancel_streak:
            crawler.signals.connect(self.domain_blocked, signal=domain_blocked)
        crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def spider_idle(self) -> None:
        # Only the reason of a job that is closing anyway: Scrapy ignores it while another
        # handler keeps the spider open.
        stats = self.crawler.stats
        # Only failures of the sites count: an unreadable shared request or a refused address
        # is an error row, not a sign that no seed can be reached.
        errors = self.site_failures
        if errors and not stats.get_value("response_received_count", 0):
            if not self.closing:
                self.closing = True
                why = self._unreachable(errors)
                logger.error("Closing the job (%s): %s", REASON_SEEDS_UNREACHABLE, why)
                stats.set_value("job/close_cause", why)
            raise CloseSpider(REASON_SEEDS_UNREACHABLE)

    def item_scraped(self, item: Any) -> None:
        if not isinstance(item, PageItem):
            return
        if item.status == "error" and item.site_failure:
            self.site_failures += 1
            self.first_failure = self.first_failure or item
            self.streak += 1
            if self.threshold and self.streak >= self.threshold:
                self._close(FAILED, f"{self.streak} consecutive failed pages, the last {item.url}: {item.error}")
        elif item.status in FETCHED_STATUSES:
            self.streak = 0

    def _unreachable(self, errors: int) -> str:
        first = self.first_failure
        assert first is not None
        hint = ""
        if (first.error or "").startswith("TLS error") and urlsplit(first.url).scheme == "https":
            plain = urlsplit(first.url)._replace(scheme="http").geturl()
            hint = f" (if the site speaks plain HTTP, give the seed as {plain}: a seed without a scheme means https://)"
        rows = f"{errors} error row{'s' if errors != 1 else ''}"
        return (
            f"no page could be fetched; first {first.url}: {first.error}{hint}; {rows} in scrapy export --status error"
        )

    def domain_blocked(self, domain: str, outcome: Outcome) -> None:
        # Every blocking answer, including those the retry middleware turns into retries.
        state = self.limiter.state(domain)
        at_maximum = outcome.delay_after >= self.limiter.policy.config.max_delay
        if at_maximum and state.blocking_streak >= self.cancel_streak:
            self._close(
                CANCELLED_429,
                f"{state.blocking_streak} consecutive refusals (blocking answers) from {domain} at the maximum delay",
            )

    def _close(self, reason: str, why: str) -> None:
        if self.closing or self.crawler.engine is None:
            return
        self.closing = True
        logger.error("Closing the job (%s): %s", reason, why)
        self.crawler.stats.set_value("job/close_cause", why)
        deferred_from_coro(self.crawler.engine.close_spider_async(reason=reason))

"""Obey robots.txt (RFC 9309), replacing Scrapy's ``RobotsTxtMiddleware``.

What the stock middleware does not: ``Crawl-delay`` goes to the domain limiter; the fetch is
paced like any request of the domain (the frontier starts it on a reserved slot and hands out
the domain's pages only once the rules are known, so no page waits in the downloader for it);
4xx means allow all; 429, 5xx or no answer mean disallow all for now and fetch again after
``CRAWLER_ROBOTS_RETRY_SECONDS`` (``CRAWLER_ROBOTS_FAIL_OPEN`` allows instead); redirects are
followed, at most 5 (http to https, apex to www); only the first 500 KiB of the file are read
(the download stops there, whatever the file's size); rules cached for ``CRAWLER_ROBOTS_TTL``
(at most 24 h); every refusal is recorded with the rule that made it (allowed decisions too with
``CRAWLER_ROBOTS_RECORD_ALLOWED``). A spider's own request for a robots.txt already fetched is
served from the cache.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Self
from weakref import WeakKeyDictionary

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest, NotConfigured, StopDownload
from scrapy.http import Response
from scrapy.http.headers import Headers
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.python import global_object_name

from crawler.compat import schedule_engine
from crawler.exceptions import BlockedByPolicy, RedirectRefused, RobotsUnreachable
from crawler.frontier.meta import DOMAIN, HOLDER, RESERVATION, domain_key, robots_holder
from crawler.politeness.limiter import DomainLimiter, limiter_for
from crawler.robots.cache import CACHED_RESPONSE_FLAG, RobotsCache, RobotsEntry
from crawler.robots.rules import MAX_BYTES, RobotsRules
from crawler.robots.status import no_answer, rules_for_status, unreachable
from crawler.shared.connection import shared_services
from crawler.shared.robots import SharedRobots, SharedRobotsFile
from crawler.storage.outbox import shared_storage
from crawler.storage.values import unix_time

logger = logging.getLogger(__name__)

MAX_TTL = 24 * 3600.0
MIN_TTL = 1.0
MAX_REDIRECTS = 5
FETCH_BYTES = "robots_fetch_bytes"
"""Meta key of this middleware's robots.txt fetches: the bytes received so far."""


class RobotsMiddleware:
    def __init__(self, crawler: Crawler, limiter: DomainLimiter):
        settings = crawler.settings
        self.crawler = crawler
        self.stats = crawler.stats
        self.limiter = limiter
        self.user_agent = settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT")
        self.fail_open = settings.getbool("CRAWLER_ROBOTS_FAIL_OPEN")
        self.record_allowed = settings.getbool("CRAWLER_ROBOTS_RECORD_ALLOWED")
        self.cache = RobotsCache(
            # At least a second: rules must outlive the fetch that brought them.
            ttl=min(max(settings.getfloat("CRAWLER_ROBOTS_TTL"), MIN_TTL), MAX_TTL),
            retry_after=settings.getfloat("CRAWLER_ROBOTS_RETRY_SECONDS"),
        )
        self._fetching: dict[str, asyncio.Future[RobotsEntry]] = {}
        services = shared_services(crawler)
        self.shared = SharedRobots(services.frontier, services.link) if services is not None else None
        _registry[crawler] = self

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured
        middleware = cls(crawler, limiter_for(crawler))
        crawler.signals.connect(middleware.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(middleware.headers_received, signal=signals.headers_received)
        crawler.signals.connect(middleware.bytes_received, signal=signals.bytes_received)
        return middleware

    async def spider_opened(self) -> None:
        """Reuse the robots.txt files earlier jobs stored that are still valid."""
        storage = shared_storage(self.crawler)
        if storage is None:
            return
        now = datetime.now(UTC)
        rows = await storage.backend.execute(
            "SELECT domain, robots_txt, robots_status, robots_fetched_at, robots_expires_at FROM domains "
            "WHERE robots_status IS NOT NULL AND robots_expires_at > ?",
            (now,),
        )
        for domain, text, status, fetched_at, expires_at in rows:
            body = (text or "").encode("utf-8")
            rules = self._rules(status, body)
            entry = self.cache.put(domain, rules, status, body, unix_time(fetched_at))
            entry.expires_at = min(unix_time(expires_at), entry.expires_at)
            self.limiter.set_robots_delay(domain, rules.crawl_delay)
        if rows:
            logger.info("Reusing the stored robots.txt of %d domains", len(rows))

    # --- for the frontier ------------------------------------------------------------------------
    def ready(self, domain: str) -> bool:
        return self._cached(domain, self.limiter.clock()) is not None

    def _cached(self, domain: str, now: float) -> RobotsEntry | None:
        """The domain's rules from this process's cache, else from the crawl's shared one."""
        entry = self.cache.get(domain, now)
        if entry is None and self.shared is not None:
            file = self.shared.get(domain, now)
            if file is not None:
                entry = self.cache.put(domain, self._rules(file.status, file.body), file.status, file.body, file.fetched_at)
                entry.expires_at = file.expires_at
        return entry

    def publish(self, domain: str) -> None:
        """Share rules this process already has (from an earlier job) with the crawl's others."""
        entry = self.cache.get(domain, self.limiter.clock())
        if entry is not None and self.shared is not None:
            self.shared.put(domain, SharedRobotsFile(entry.status, entry.body, entry.fetched_at, entry.expires_at))

    def forget(self, domain: str) -> None:
        """Drop the rules of a domain idle for long (fetched again if it comes back)."""
        self.cache.forget(domain)

    def fetching(self, domain: str) -> bool:
        return domain in self._fetching

    def fetch(self, domain: str, scheme: str, reservation: float | None = None) -> asyncio.Future[RobotsEntry]:
        """Fetch the domain's robots.txt (once at a time), on a slot the caller reserved."""
        future = self._fetching.get(domain)
        if future is None:
            meta = {"dont_obey_robotstxt": True, "dont_retry": True, "redirect_ttl": MAX_REDIRECTS, FETCH_BYTES: 0}
            if reservation is not None:
                meta.update({DOMAIN: domain, RESERVATION: reservation, HOLDER: robots_holder(domain)})
            request = Request(f"{scheme}://{domain}/robots.txt", meta=meta, priority=1000, dont_filter=True)
            future = self._fetching[domain] = asyncio.ensure_future(self._fetch(domain, request))
        return future

    async def _fetch(self, domain: str, request: Request) -> RobotsEntry:
        self.stats.inc_value("robotstxt/request_count")
        try:
            response = await self.crawler.engine.download_async(request)
        except BlockedByPolicy as exc:
            # The address guard refused the domain itself: its pages meet the same check, each
            # refused as its own row with the reason, rather than blocked by rules never read. A
            # redirect refused elsewhere leaves the file unreachable.
            self.stats.inc_value(f"robotstxt/exception_count/{global_object_name(type(exc))}")
            cause = f"robots.txt {exc}"
            rules = unreachable(self.user_agent, cause, fail_open=self.fail_open) if isinstance(exc, RedirectRefused) else RobotsRules.allowing_all(self.user_agent, cause)
            entry = self._store(domain, rules, None, b"")
        except Exception as exc:  # any failure to get an answer is "unreachable"
            self.stats.inc_value(f"robotstxt/exception_count/{global_object_name(type(exc))}")
            entry = self._store(domain, unreachable(self.user_agent, no_answer(exc), fail_open=self.fail_open), None, b"")
        else:
            self.stats.inc_value(f"robotstxt/response_status_count/{response.status}")
            body = response.body[:MAX_BYTES]
            entry = self._store(domain, self._rules(response.status, body), response.status, body)
        finally:
            self._fetching.pop(domain, None)
            schedule_engine(self.crawler)  # the domain's pages may be handed out now
        return entry

    def headers_received(self, headers: Headers, request: Request) -> None:
        # A plain file larger than DOWNLOAD_MAXSIZE is read up to MAX_BYTES, not refused for its
        # size; a compressed one keeps the limit, which also bounds its decompression.
        if FETCH_BYTES in request.meta and not headers.get("Content-Encoding"):
            request.meta["download_maxsize"] = 0

    def bytes_received(self, data: bytes, request: Request) -> None:
        if FETCH_BYTES in request.meta:
            received = request.meta[FETCH_BYTES] = request.meta[FETCH_BYTES] + len(data)
            if received >= MAX_BYTES:
                self.stats.inc_value("robotstxt/cut")
                raise StopDownload(fail=False)

    def _rules(self, status: int, body: bytes) -> RobotsRules:
        rules = rules_for_status(status, self.user_agent, fail_open=self.fail_open)
        return rules if rules is not None else RobotsRules.parse(body, self.user_agent)

    def _store(self, domain: str, rules: RobotsRules, status: int | None, body: bytes) -> RobotsEntry:
        entry = self.cache.put(domain, rules, status, body, self.limiter.clock())
        previous = self.limiter.state(domain).robots_delay
        # The delay first: in a shared crawl, publishing lets every process start the domain.
        self.limiter.set_robots_delay(domain, rules.crawl_delay)
        self.publish(domain)
        if rules.crawl_delay is not None and rules.crawl_delay != previous:
            logger.info("Pacing of %s: robots.txt Crawl-delay %.3f s", domain, rules.crawl_delay)
        storage = shared_storage(self.crawler)
        if storage is not None:
            storage.outbox.robots[domain] = (
                domain,
                body[:MAX_BYTES].decode("utf-8", errors="replace") if status and status < 300 else None,
                status,
                datetime.fromtimestamp(entry.fetched_at, UTC),
                datetime.fromtimestamp(entry.expires_at, UTC),
                rules.crawl_delay,
                rules.allow_all or rules.parser is not None,
                datetime.now(UTC),
            )
        return entry

    # --- downloader middleware -------------------------------------------------------------------
    async def process_request(self, request: Request) -> Response | None:
        domain = domain_key(request)
        now = self.limiter.clock()
        if urlparse_cached(request).path == "/robots.txt":
            entry = self._cached(domain, now)
            if entry is not None and entry.status is not None:
                return Response(request.url, status=entry.status, body=entry.body, flags=[CACHED_RESPONSE_FLAG], request=request)
        if request.meta.get("dont_obey_robotstxt"):
            return None
        entry = self._cached(domain, now)
        if entry is None:  # a request that did not come through the frontier waits for the rules
            entry = await self.fetch(domain, urlparse_cached(request).scheme)
        decision = entry.rules.decide(request.url)
        self._record(request, domain, entry, decision.allowed, decision.rule)
        if not decision.allowed:
            if entry.status is None:  # no answer at all: the site is down, not refusing
                raise RobotsUnreachable(decision.rule)
            logger.debug("Forbidden by robots.txt (%s): %s", decision.rule, request)
            raise IgnoreRequest(f"Forbidden by robots.txt: {decision.rule}")
        return None

    def _record(self, request: Request, domain: str, entry: RobotsEntry, allowed: bool, rule: str | None) -> None:
        self.stats.inc_value("robotstxt/allowed" if allowed else "robotstxt/forbidden")
        storage = shared_storage(self.crawler)
        # A row per allowed request is most of the table and says little: off by default.
        if storage is None or (allowed and not self.record_allowed):
            return
        spider = self.crawler.spider
        storage.outbox.robots_decisions.append((
            request.url, domain, self.user_agent, allowed, rule, entry.rules.crawl_delay,
            entry.rules.reason or None, datetime.now(UTC), getattr(spider, "job_id", None),
        ))  # fmt: skip


_registry: WeakKeyDictionary[Crawler, RobotsMiddleware] = WeakKeyDictionary()


def robots_for(crawler: Crawler) -> RobotsMiddleware | None:
    """The crawl's robots middleware, or None when robots.txt is not obeyed."""
    return _registry.get(crawler)

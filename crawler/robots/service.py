"""The crawl's robots.txt (RFC 9309): fetched once per domain, cached, shared, and obeyed.

What Scrapy's ``RobotsTxtMiddleware`` does not: ``Crawl-delay`` goes to the domain limiter; the
fetch is paced like any request of the domain (the frontier reserves the domain's slot for it,
``claimed``, and hands out the domain's pages only once the rules are known, so no page waits in
the downloader for it); 4xx means allow all; 429, 5xx or no answer mean disallow all for now and
fetch again after ``CRAWLER_ROBOTS_RETRY_SECONDS`` (``CRAWLER_ROBOTS_FAIL_OPEN`` allows
instead); at most 5 redirects (http to https, apex to www); only the first 500 KiB are read (the
download stops there); rules cached for ``CRAWLER_ROBOTS_TTL`` (at most 24 h), in the process
and, in a shared crawl, in Redis for every process; every refusal recorded with the rule that
made it (allowed decisions too with ``CRAWLER_ROBOTS_RECORD_ALLOWED``). The robots middleware
asks it about every request.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest, StopDownload
from scrapy.http import Response
from scrapy.http.headers import Headers
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.python import global_object_name

from crawler.compat import schedule_engine
from crawler.exceptions import BlockedByPolicy, ProxyRefused, RedirectRefused, RobotsUnreachable
from crawler.guard.proxies import through_proxy
from crawler.politeness.limiter_local import DomainLimiter
from crawler.politeness.slots import DOMAIN, HOLDER, RESERVATION, domain_key, robots_holder
from crawler.robots.cache_local import RobotsCache, RobotsEntry
from crawler.robots.rules import MAX_BYTES, RobotsRules
from crawler.robots.status import no_answer, rules_for_status, unreachable
from crawler.storage.domains import valid_robots_files
from crawler.storage.outbox import CrawlStorage
from crawler.storage.rows import robots_decision_row, robots_row
from crawler.storage.values import unix_time

if TYPE_CHECKING:
    from crawler.robots.cache_redis import RedisRobotsCache

logger = logging.getLogger(__name__)

MAX_TTL = 24 * 3600.0
MIN_TTL = 1.0
MAX_REDIRECTS = 5
FETCH_BYTES = "robots_fetch_bytes"
"""Meta key of the service's robots.txt fetches: the bytes received so far."""
CACHED_RESPONSE_FLAG = "robots-cache"
"""Flag of a robots.txt response served from the cache: it used no network."""


class RobotsService:
    def __init__(self, crawler: Crawler, limiter: DomainLimiter, storage: CrawlStorage):
        settings = crawler.settings
        self.crawler = crawler
        self.stats = crawler.stats
        self.limiter = limiter
        self.storage = storage
        self.user_agent = settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT")
        self.fail_open = settings.getbool("CRAWLER_ROBOTS_FAIL_OPEN")
        self.record_allowed = settings.getbool("CRAWLER_ROBOTS_RECORD_ALLOWED")
        self.cache = RobotsCache(
            # At least a second: rules must outlive the fetch that brought them.
            ttl=min(max(settings.getfloat("CRAWLER_ROBOTS_TTL"), MIN_TTL), MAX_TTL),
            retry_after=settings.getfloat("CRAWLER_ROBOTS_RETRY_SECONDS"),
        )
        self.shared_cache: RedisRobotsCache | None = None
        """The crawl's cache in Redis, in a shared crawl."""
        self._fetching: dict[str, asyncio.Future[RobotsEntry]] = {}
        self.max_fetches = max(1, settings.getint("CONCURRENT_REQUESTS"))
        """At most this many fetches at once from the frontier (``room``), as many as the crawl's
        requests: the engine does not count a fetch until it has begun."""
        self._stored: set[str] = set()
        """Domains whose rules came from the database and have not been used yet."""
        crawler.signals.connect(self.load_stored, signal=signals.spider_opened)
        crawler.signals.connect(self.headers_received, signal=signals.headers_received)
        crawler.signals.connect(self.bytes_received, signal=signals.bytes_received)

    def rules(self, status: int | None, body: bytes, allow_all: bool = False, reason: str = "") -> RobotsRules:
        """The rules an answer means; a fetch with no answer (no status) keeps the verdict it
        was given (``allow_all``) and why (``reason``)."""
        if status is None:
            make = RobotsRules.allowing_all if allow_all else RobotsRules.disallowing_all
            return make(self.user_agent, reason or "robots.txt unreachable")
        implied = rules_for_status(status, self.user_agent, fail_open=self.fail_open)
        return implied if implied is not None else RobotsRules.parse(body, self.user_agent)

    async def load_stored(self) -> None:
        """Load the robots.txt files earlier jobs stored that are still valid, to be reused if
        their domains are crawled (said when they are)."""
        if not self.storage.opened:
            return
        rows = await valid_robots_files(self.storage.backend, datetime.now(UTC))
        for domain, text, status, fetched_at, expires_at in rows:
            body = (text or "").encode("utf-8")
            entry = self.cache.entry(self.rules(status, body), status, body, unix_time(fetched_at))  # type: ignore[arg-type]
            entry.expires_at = min(unix_time(expires_at), entry.expires_at)  # type: ignore[type-var]
            self.cache.put(domain, entry)
            self.limiter.set_robots_delay(domain, entry.rules.crawl_delay)
            self._stored.add(domain)

    # --- for the frontier ------------------------------------------------------------------------
    def ready(self, domain: str) -> bool:
        return self.cached(domain) is not None

    def cached(self, domain: str) -> RobotsEntry | None:
        """The domain's rules in this process's cache (where a shared crawl loads the others')."""
        return self.cache.get(domain, self.limiter.clock())

    def fetching(self, domain: str) -> bool:
        return domain in self._fetching

    def room(self) -> int:
        """How many more fetches the frontier may start now."""
        return max(0, self.max_fetches - len(self._fetching))

    def claimed(self, domain: str, scheme: str, reservation: object) -> bool:
        """The frontier reserved the domain's slot for its robots.txt: rules this process has
        already (stored by an earlier job) are shared and the slot given back; else the file is
        fetched on it. Whether it is fetched."""
        if (entry := self.cached(domain)) is not None:
            self.share(domain, entry)
            self.limiter.unreserve(domain, reservation)
            self.limiter.finish(domain, robots_holder(domain))
            return False
        self.fetch(domain, scheme, reservation)
        return True

    def share(self, domain: str, entry: RobotsEntry) -> None:
        """Share rules this process has with the crawl's other processes."""
        if self.shared_cache is not None:
            self.shared_cache.share(domain, entry)

    def forget(self, domain: str) -> None:
        """Drop the rules of a domain idle for long (fetched, or read from Redis, again if it
        comes back)."""
        self.cache.forget(domain)

    def fetch(self, domain: str, scheme: str, reservation: object | None = None) -> asyncio.Future[RobotsEntry]:
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
            rules = (
                unreachable(self.user_agent, cause, fail_open=self.fail_open)
                if isinstance(exc, RedirectRefused)
                else RobotsRules.allowing_all(self.user_agent, cause)
            )
            entry = self._store(domain, rules, None, b"")
        except Exception as exc:  # any failure to get an answer is "unreachable"
            self.stats.inc_value(f"robotstxt/exception_count/{global_object_name(type(exc))}")
            cause = no_answer(exc) if isinstance(exc, ProxyRefused) else through_proxy(no_answer(exc), request.meta)
            entry = self._store(domain, unreachable(self.user_agent, cause, fail_open=self.fail_open), None, b"")
        else:
            self.stats.inc_value(f"robotstxt/response_status_count/{response.status}")
            body = response.body[:MAX_BYTES]
            entry = self._store(domain, self.rules(response.status, body), response.status, body)
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

    def _store(self, domain: str, rules: RobotsRules, status: int | None, body: bytes) -> RobotsEntry:
        entry = self.cache.put(domain, self.cache.entry(rules, status, body, self.limiter.clock()))
        self._stored.discard(domain)  # fetched again: what the database had is not what is used
        previous = self.limiter.state(domain).robots_delay
        # The delay first: in a shared crawl, publishing lets every process start the domain.
        self.limiter.set_robots_delay(domain, rules.crawl_delay)
        self.share(domain, entry)
        if rules.crawl_delay is not None and rules.crawl_delay != previous:
            logger.info("Pacing of %s: robots.txt Crawl-delay %.3f s", domain, rules.crawl_delay)
        if self.storage.opened:
            text = body[:MAX_BYTES].decode("utf-8", errors="replace") if status and status < 300 else None
            allowed = rules.allow_all or rules.parser is not None
            self.storage.outbox.robots[domain] = robots_row(
                domain, text, status, entry.fetched_at, entry.expires_at, rules.crawl_delay, allowed
            )
        return entry

    # --- for the middleware ----------------------------------------------------------------------
    def cached_response(self, request: Request) -> Response | None:
        """A spider's own request for a robots.txt already fetched, answered from the cache."""
        if urlparse_cached(request).path != "/robots.txt":
            return None
        entry = self.cached(domain_key(request))
        if entry is None or entry.status is None:
            return None
        return Response(
            request.url, status=entry.status, body=entry.body, flags=[CACHED_RESPONSE_FLAG], request=request
        )

    def rules_of(self, response: Response) -> RobotsRules:
        """The rules of a robots.txt response: those read when the file was fetched if the
        response came from the cache, else read from it now."""
        entry = self.cached(domain_key(response.request)) if CACHED_RESPONSE_FLAG in response.flags else None
        return entry.rules if entry is not None else self.rules(response.status, response.body)

    async def check(self, request: Request) -> None:
        """Raise ``IgnoreRequest`` (``RobotsUnreachable`` when the site gave no answer) if the
        rules refuse ``request``; a request that did not come through the frontier waits for
        its domain's rules."""
        domain = domain_key(request)
        entry = self.cached(domain)
        if entry is None:
            entry = await self.fetch(domain, urlparse_cached(request).scheme)
        elif domain in self._stored:
            self._stored.discard(domain)
            self.stats.inc_value("robotstxt/reused_stored")
            logger.debug("Reusing the robots.txt of %s stored by an earlier job", domain)
        decision = entry.rules.decide(request.url)
        self._record(request, domain, entry, decision.allowed, decision.rule)
        if not decision.allowed:
            if entry.status is None:  # no answer at all: the site is down, not refusing
                raise RobotsUnreachable(decision.rule)
            logger.debug("Forbidden by robots.txt (%s): %s", decision.rule, request)
            raise IgnoreRequest(f"Forbidden by robots.txt: {decision.rule}")

    def _record(self, request: Request, domain: str, entry: RobotsEntry, allowed: bool, rule: str | None) -> None:
        self.stats.inc_value("robotstxt/allowed" if allowed else "robotstxt/forbidden")
        # A row per allowed request is most of the table and says little: off by default.
        if not self.storage.opened or (allowed and not self.record_allowed):
            return
        job_id = getattr(self.crawler.spider, "job_id", None)
        self.storage.outbox.robots_decisions.append(
            robots_decision_row(
                request.url,
                domain,
                self.user_agent,
                allowed,
                rule,
                entry.rules.crawl_delay,
                entry.rules.reason or None,
                job_id,
            )
        )

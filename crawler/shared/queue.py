"""The domain-aware queue class for scrapy-redis (``SCHEDULER_QUEUE_CLASS``).

Per-domain queues and a ready-time index live in Redis (``SharedFrontier``); a pop hands out
only a request whose domain is ready, reserving its slot, whichever process asks. A popped
request is leased, not removed: it is acknowledged when its row is committed
(``rows_committed``) and goes back to the queue if its lease expires first (a killed worker).
While Redis is away, pushes wait in memory and pops return nothing; both resume with it.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any

import redis
from scrapy import Request, Spider
from scrapy.utils.httpobj import urlparse_cached
from scrapy_redis.queue import Base

from crawler.frontier.codec import RequestCodec, UnserializableRequest
from crawler.frontier.meta import DOMAIN, HOLDER, NOT_BEFORE, RESERVATION, domain_key, robots_holder
from crawler.frontier.unfetched import record_outcome
from crawler.frontier.wakeup import EngineWakeup
from crawler.middlewares.robots import robots_for
from crawler.shared.connection import REDIS_ERRORS, shared_services
from crawler.shared.store import SharedFrontier
from crawler.storage.signals import rows_committed

logger = logging.getLogger(__name__)

@dataclass(frozen=True, slots=True)
class QueueEntry:
    """A request as the shared frontier queues it."""

    domain: str
    priority: int
    request: str
    not_before: float
    scheme: str
    seen: tuple[str, int] | None

    @classmethod
    def of(cls, request: Request, codec: RequestCodec, seen: tuple[str, int] | None = None) -> QueueEntry:
        """Raises ``UnserializableRequest`` for a request that cannot be shared."""
        encoded = codec.encode(request, lease_key(request))
        scheme = urlparse_cached(request).scheme
        return cls(domain_key(request), request.priority, encoded, request.meta.get(NOT_BEFORE) or 0.0, scheme, seen)

    def push_to(self, frontier: SharedFrontier) -> bool:
        """False when the request was seen before."""
        return frontier.push(
            self.domain, self.priority, self.request, not_before=self.not_before, scheme=self.scheme, seen=self.seen
        )


def lease_key(request: Request) -> str:
    """The URL the request's row will carry: the first of its redirect chain."""
    return request.meta.get("redirect_urls", [request.url])[0]


class SharedFrontierQueue(Base):
    def __init__(self, server: redis.Redis, spider: Spider, key: str, serializer: Any = None):
        super().__init__(server, spider, key, serializer=json)
        crawler = spider.crawler
        services = shared_services(crawler)
        assert services is not None, "the shared frontier needs REDIS_URL"
        self.crawler = crawler
        self.frontier = services.frontier
        settings = crawler.settings
        self.codec = RequestCodec(
            spider, settings.getlist("CRAWLER_REDIS_META_KEYS"), settings.getlist("CRAWLER_REDIS_LOCAL_META_KEYS")
        )
        self.poll_seconds = settings.getfloat("CRAWLER_REDIS_POLL_SECONDS")
        self.stats = crawler.stats
        self.wakeup = EngineWakeup(crawler)
        self.leased: set[str] = set()
        """Lease keys this process holds, released if it closes before their rows are stored."""
        self._unsent: list[QueueEntry] = []
        self._unacked: set[str] = set()
        self._outage_since: float | None = None
        crawler.signals.connect(self.rows_committed, signal=rows_committed)

    # --- scrapy-redis queue interface -------------------------------------------------------------
    def push(self, request: Request, seen: tuple[str, int] | None = None) -> bool:
        """Queue ``request``; with ``seen`` (``SeenFilter.marker``), only if it was not seen
        before: False then. Raises ``UnserializableRequest`` for a request that cannot be shared."""
        entry = QueueEntry.of(request, self.codec, seen)
        if not self._unsent:
            pushed = self._try(lambda: entry.push_to(self.frontier))
            if pushed:
                # A retry or redirect of a request leased here: its lease passed to the queue.
                self.leased.discard(lease_key(request))
            if pushed is not None:
                return pushed
        self._unsent.append(entry)  # checked against the seen filter when Redis is back
        return True

    def pop(self, timeout: int = 0) -> Request | None:
        if not self._try(self._catch_up):
            return None
        while True:
            popped = self._try(self.frontier.pop)
            if popped is None:
                return None
            if popped.kind == "none":
                wait = self.poll_seconds if popped.next_ready is None else popped.next_ready - self.frontier.clock()
                self.wakeup.at(min(wait, self.poll_seconds))
                return None
            if popped.kind == "robots":
                self._robots(popped.domain, popped.request, popped.reservation)
                continue
            request = self._decode(popped.domain, popped.request, popped.reservation)
            if request is None:
                continue
            key = lease_key(request)
            self.leased.add(key)
            request.meta.update({DOMAIN: popped.domain, RESERVATION: popped.reservation, HOLDER: key})
            return request

    def __len__(self) -> int:
        try:
            sizes = self.frontier.sizes()
        except REDIS_ERRORS:
            return len(self._unsent) or 1  # keep the worker alive until Redis is back
        return sizes.queued + sizes.delayed + len(self._unsent)

    def clear(self) -> None:
        self.frontier.clear()

    # --- leases ----------------------------------------------------------------------------------
    def rows_committed(self, urls: list[str]) -> None:
        done = [url for url in urls if url in self.leased]
        if not done:
            return
        self.leased.difference_update(done)
        self._unacked.update(done)
        self._try(self._ack)

    def _ack(self) -> None:
        self.frontier.ack(self._unacked)
        self.stats.inc_value("frontier/acknowledged", len(self._unacked))
        self._unacked.clear()

    def release(self) -> None:
        """Give back the leases of requests this process will not finish."""
        if self.leased and self._try(lambda: self.frontier.release(self.leased)):
            logger.info("Gave %d unfinished requests back to the shared frontier", len(self.leased))
            self.leased.clear()
        self._try(self._catch_up)
        if self._unsent:
            logger.error("Redis unavailable at shutdown: %d requests could not be queued", len(self._unsent))

    # --- internals -------------------------------------------------------------------------------
    def _catch_up(self) -> None:
        """Send what waited for Redis."""
        while self._unsent:
            self._unsent[0].push_to(self.frontier)
            self._unsent.pop(0)
        if self._unacked:
            self._ack()

    def _robots(self, domain: str, scheme: str, reservation: str) -> None:
        robots = robots_for(self.crawler)
        if robots is None:
            return
        if robots.ready(domain):  # known here (stored by an earlier job): publish, free the slot
            robots.publish(domain)
            self.frontier.unreserve(domain, reservation)
            self.frontier.finish(domain, robots_holder(domain))
            return
        self.stats.inc_value("frontier/robots_fetches")
        robots.fetch(domain, scheme, reservation)

    def _decode(self, domain: str, encoded: str, reservation: str) -> Request | None:
        try:
            return self.codec.decode(encoded)[1]
        except (ValueError, UnserializableRequest) as exc:
            key = encoded.partition("\t")[0]
            logger.error("Dropping an unreadable request from the shared frontier (%s): %r", exc, encoded[:200])
            self.stats.inc_value("frontier/unreadable")
            try:
                record_outcome(self.crawler, Request(key), "error", f"unreadable in the shared frontier: {exc}")
            except ValueError:
                logger.error("No row for %r: not a URL", key)
            self.frontier.unreserve(domain, reservation)  # nothing was sent on its slot
            self.frontier.finish(domain, key)
            self.frontier.ack([key])
            return None

    def _try(self, operation: Any) -> Any:
        """Run a Redis operation; None (and a wake-up later) while Redis is unavailable."""
        try:
            result = operation()
        except REDIS_ERRORS as exc:
            now = time.monotonic()
            if self._outage_since is None:
                self._outage_since = now
                logger.warning("Redis unavailable (%s): the worker pauses and keeps %d requests in memory", exc, len(self._unsent))
            self.stats.inc_value("frontier/redis_errors")
            self.wakeup.at(1.0)
            return None
        if self._outage_since is not None:
            logger.info("Redis available again after %.1f s", time.monotonic() - self._outage_since)
            self._outage_since = None
        return True if result is None else result

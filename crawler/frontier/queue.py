"""The politeness-aware frontier: Scrapy's scheduler priority queue, one queue per domain,
handing out only requests whose domain is ready.

Plugged in with ``SCHEDULER_PRIORITY_QUEUE``. Modelled on Scrapy's
``DownloaderAwarePriorityQueue`` (one ``ScrapyPriorityQueue`` per slot), it adds what that one
lacks: a domain is handed a request only when the limiter says its next slot has come, it is
not blocked and its concurrency allows; the slot is reserved as the request is handed out, so a
throttled domain never holds downloader capacity that other domains could use. Requests with a
``not_before`` time (retries with backoff) wait here, not in a worker. When nothing is ready the
queue wakes the engine itself at the next ready time; Scrapy would otherwise ask only every 5 s.
"""

from __future__ import annotations

import heapq
import itertools
import uuid
from collections.abc import Iterable
from typing import Any, Self

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.pqueues import ScrapyPriorityQueue
from scrapy.utils.httpobj import urlparse_cached

from crawler.frontier.meta import DOMAIN, HOLDER, NOT_BEFORE, RESERVATION, domain_key, robots_holder
from crawler.frontier.wakeup import EngineWakeup
from crawler.middlewares.robots import robots_for
from crawler.politeness.limiter import DomainLimiter, limiter_for


class PolitePriorityQueue:
    @classmethod
    def from_crawler(
        cls,
        crawler: Crawler,
        downstream_queue_cls: type,
        key: str,
        startprios: dict[str, Iterable[int]] | None = None,
        *,
        start_queue_cls: type | None = None,
    ) -> Self:
        return cls(crawler, downstream_queue_cls, key, startprios, start_queue_cls=start_queue_cls)

    def __init__(
        self,
        crawler: Crawler,
        downstream_queue_cls: type,
        key: str,
        startprios: dict[str, Iterable[int]] | None = None,
        *,
        start_queue_cls: type | None = None,
        limiter: DomainLimiter | None = None,
    ):
        self.crawler = crawler
        self.downstream_queue_cls = downstream_queue_cls
        self.start_queue_cls = start_queue_cls
        self.key = key
        self.limiter = limiter or limiter_for(crawler)
        self.queues: dict[str, ScrapyPriorityQueue] = {}
        self.waiting: list[tuple[float, int, Request]] = []  # (not_before, order, request)
        self._order = itertools.count()
        self._rotation = itertools.count()
        self._served: dict[str, int] = {}
        self._wakeup = EngineWakeup(crawler)
        self._schemes: dict[str, str] = {}
        self._holder_prefix = f"local-{uuid.uuid4().hex[:12]}"  # unique among a shared crawl's processes
        for domain, prios in (startprios or {}).items():
            self.queues[domain] = self._queue(domain, prios)

    def _queue(self, domain: str, startprios: Iterable[int] = ()) -> ScrapyPriorityQueue:
        safe = "".join(c if c.isalnum() or c in "-." else "_" for c in domain)
        return ScrapyPriorityQueue(
            self.crawler,
            self.downstream_queue_cls,
            f"{self.key}/{safe}" if self.key else "",
            startprios,
            start_queue_cls=self.start_queue_cls,
        )

    def push(self, request: Request) -> None:
        not_before = request.meta.get(NOT_BEFORE)
        if not_before is not None and not_before > self.limiter.clock():
            heapq.heappush(self.waiting, (not_before, next(self._order), request))
            return
        self._enqueue(request)

    def _enqueue(self, request: Request) -> None:
        domain = domain_key(request)
        self._schemes.setdefault(domain, urlparse_cached(request).scheme)
        queue = self.queues.get(domain)
        if queue is None:
            queue = self.queues[domain] = self._queue(domain)
        queue.push(request)

    def pop(self) -> Request | None:
        now = self.limiter.clock()
        while self.waiting and self.waiting[0][0] <= now:
            self._enqueue(heapq.heappop(self.waiting)[2])
        best: tuple[int, int, str] | None = None
        robots = robots_for(self.crawler)
        for domain, queue in self.queues.items():
            if queue.curprio is None or not self.limiter.can_start(domain, now):
                continue
            if robots is not None and not robots.ready(domain):
                # The domain's robots.txt comes first, on the domain's own slot.
                if not robots.fetching(domain):
                    reservation = self.limiter.try_start(domain, robots_holder(domain))
                    if reservation is not None:
                        robots.fetch(domain, self._schemes.get(domain, "http"), reservation)
                continue
            # Highest priority first (lowest curprio); among equals the domain served longest ago.
            candidate = (queue.curprio, self._served.get(domain, -1), domain)
            if best is None or candidate < best:
                best = candidate
        if best is None:
            self._wake_engine_at(self._next_ready(now), now)
            return None
        domain = best[2]
        queue = self.queues[domain]
        holder = f"{self._holder_prefix}:{next(self._order)}"
        reservation = self.limiter.try_start(domain, holder)
        if reservation is None:  # another process of a shared crawl took the slot first
            self._wake_engine_at(self.limiter.ready_at(domain), now)
            return None
        request = queue.pop()
        if len(queue) == 0:
            del self.queues[domain]
            queue.close()
        request.meta.update({DOMAIN: domain, RESERVATION: reservation, HOLDER: holder})
        self._served[domain] = next(self._rotation)
        return request

    def _next_ready(self, now: float) -> float | None:
        robots = robots_for(self.crawler)
        # A domain whose robots.txt is being fetched is woken when it arrives.
        times = [
            self.limiter.ready_at(domain)
            for domain in self.queues
            if robots is None or not robots.fetching(domain)
        ]
        times = [t for t in times if t > now]  # domains at their concurrency limit wake on a response
        if self.waiting:
            times.append(self.waiting[0][0])
        return min(times) if times else None

    def _wake_engine_at(self, when: float | None, now: float) -> None:
        if when is not None:
            self._wakeup.at(when - now)

    def drain(self) -> list[Request]:
        """Every request still queued, ready or not, leaving the queue empty."""
        drained = [entry[2] for entry in self.waiting]
        self.waiting.clear()
        for queue in list(self.queues.values()):
            while (request := queue.pop()) is not None:
                drained.append(request)
            queue.close()
        self.queues.clear()
        return drained

    def peek(self) -> Request | None:
        for queue in self.queues.values():
            return queue.peek()
        return None

    def close(self) -> dict[str, Any]:
        self._wakeup.cancel()
        while self.waiting:  # keep waiting retries in the persisted queues; they carry not_before
            self._enqueue(heapq.heappop(self.waiting)[2])
        state = {domain: queue.close() for domain, queue in self.queues.items()}
        self.queues.clear()
        return state

    def __len__(self) -> int:
        return sum(len(queue) for queue in self.queues.values()) + len(self.waiting)

    def __contains__(self, domain: str) -> bool:
        return domain in self.queues

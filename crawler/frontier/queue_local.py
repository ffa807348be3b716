"""The politeness-aware frontier of a crawl in one process: Scrapy's scheduler priority queue,
one queue per domain, handing out only requests whose domain is ready.

Plugged in with ``SCHEDULER_PRIORITY_QUEUE``. Modelled on Scrapy's
``DownloaderAwarePriorityQueue`` (one ``ScrapyPriorityQueue`` per slot), it adds what that one
lacks: a domain is handed a request only when the limiter says its next slot has come, it is
not blocked and its concurrency allows; the slot is reserved as the request is handed out, so a
throttled domain never holds downloader capacity that other domains could use. Requests with a
``not_before`` time (retries with backoff) wait here, not in a worker. When nothing is ready the
queue wakes the engine itself at the next ready time; Scrapy would otherwise ask only every 5 s.

Domains are indexed, so a pop looks only at domains whose time has come, whatever the number
of domains queued: each domain with queued requests has one live entry, either among the ready
(ordered by priority, then the domain served longest ago) or on the timeline (ordered by when
it may start). The limiter says when a domain may be ready sooner than its time (a slot
finished or given back, a block cleared, robots.txt arrived). A domain whose robots.txt this
process is fetching is on neither: only the arrival of the rules brings it back, so a crawl that
opens thousands of domains at once does not look at each of them every second meanwhile. Nor
does one pop start the robots.txt of thousands of domains at once (a connection and a file
descriptor each, all begun before the engine's count of requests in flight could stop it): a
domain whose fetch finds no room (``RobotsService.room``) is deferred, and brought back as
fetches end: of the deferred, highest priority first, then first deferred first.

In a shared crawl, ``RedisFrontierQueue`` keeps the same queues in Redis; this queue then holds
only the requests that cannot be shared (they carry objects of this process).
"""

from __future__ import annotations

import heapq
import itertools
import uuid
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Self

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.pqueues import ScrapyPriorityQueue
from scrapy.utils.httpobj import urlparse_cached

from crawler.frontier.meta import NOT_BEFORE
from crawler.frontier.wakeup import EngineWakeup
from crawler.politeness.limiter_local import DomainLimiter
from crawler.politeness.slots import DOMAIN, HOLDER, RESERVATION, domain_key, robots_holder
from crawler.services import CrawlServices

if TYPE_CHECKING:
    from crawler.robots.service import RobotsService

SWEEP_SECONDS = 60.0
"""How often at most the states of idle domains are looked for and evicted."""

RECHECK_SECONDS = 1.0
"""When a domain that waits for a free slot, or for a robots.txt it could not start fetching, is
looked at again unless told sooner (in a shared crawl, other processes free slots without
telling this one: there, within half the domain's delay if that is sooner)."""


class PolitePriorityQueue:
    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        return cls(crawler, *args, **kwargs)

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
        """``limiter``: the crawl's (``CrawlServices``) unless given."""
        self.crawler = crawler
        self.downstream_queue_cls = downstream_queue_cls
        self.start_queue_cls = start_queue_cls
        self.key = key
        services = CrawlServices.of(crawler)
        self.limiter = limiter or services.limiter
        self.robots = services.robots
        self.queues: dict[str, ScrapyPriorityQueue] = {}
        self.waiting: list[tuple[float, int, Request]] = []  # (not_before, order, request)
        self._size = 0
        self._order = itertools.count()
        self._rotation = itertools.count()
        self._served: dict[str, int] = {}
        self._ready: list[tuple[int, int, int, str]] = []  # (priority, last served, entry, domain)
        self._timeline: list[tuple[float, int, str]] = []  # (when, entry, domain)
        self._entry: dict[str, int] = {}  # domain -> its live entry; older ones are skipped
        self._wakeup = EngineWakeup(crawler)
        self._schemes: dict[str, str] = {}
        self._robots_deferred: list[tuple[int, int, str]] = []  # (curprio, entry, domain): a heap
        """Domains whose robots.txt found no room among the fetches in flight: highest priority,
        then first deferred, first (``_deferred``: each one's live entry)."""
        self._deferred: dict[str, tuple[int, int]] = {}
        self._holder_prefix = f"local-{uuid.uuid4().hex[:12]}"  # unique among a shared crawl's processes
        self.idle_seconds = crawler.settings.getfloat("CRAWLER_DOMAIN_IDLE_SECONDS")
        self._next_sweep = self.limiter.clock() + min(self.idle_seconds, SWEEP_SECONDS)
        for domain, prios in (startprios or {}).items():
            queue = self.queues[domain] = self._queue(domain, prios)
            self._size += len(queue)
            self._mark_ready(domain)
        self.limiter.watch(self._may_be_ready)

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
        self._size += 1
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
            self._mark_ready(domain)
            return
        best = queue.curprio
        queue.push(request)
        if queue.curprio != best:  # a higher priority: its place among the ready changes
            self._mark_ready(domain)

    def pop(self) -> Request | None:
        now = self.limiter.clock()
        if self.idle_seconds and now >= self._next_sweep:
            self._evict_idle(now)
        while self.waiting and self.waiting[0][0] <= now:
            self._enqueue(heapq.heappop(self.waiting)[2])
        while self._timeline and self._timeline[0][0] <= now:
            _, entry, domain = heapq.heappop(self._timeline)
            if self._entry.get(domain) == entry:
                self._mark_ready(domain)
        if self._robots_deferred and self.robots is not None:
            self._bring_back_deferred(self.robots, now)
        while self._ready:
            # Highest priority first (lowest curprio); among equals the domain served longest ago.
            _, _, entry, domain = heapq.heappop(self._ready)
            if self._entry.get(domain) == entry and (request := self._start(domain, now)) is not None:
                return request
        self._wake_engine_at(self._next_ready(), now)
        return None

    def _start(self, domain: str, now: float) -> Request | None:
        """The domain's next request if the domain may start one now; else the domain waits."""
        if not self.limiter.can_start(domain, now):
            self._wait(domain, now)
            return None
        if self.robots is not None and not self.robots.ready(domain):
            self._fetch_robots(domain, self.robots, now)
            return None
        holder = f"{self._holder_prefix}:{next(self._order)}"
        reservation = self.limiter.try_start(domain, holder)
        if reservation is None:  # another process of a shared crawl took the slot first
            self._wait(domain, now)
            return None
        queue = self.queues[domain]
        request = queue.pop()
        self._size -= 1
        self._served[domain] = next(self._rotation)
        if len(queue) == 0:
            del self.queues[domain], self._entry[domain]
            queue.close()
        elif (ready_at := self.limiter.ready_at(domain)) > now:
            self._mark_waiting(domain, ready_at)
        else:  # no delay: the next pop may start another if the concurrency allows
            self._mark_ready(domain)
        request.meta.update({DOMAIN: domain, RESERVATION: reservation, HOLDER: holder})
        return request

    def _fetch_robots(self, domain: str, robots: RobotsService, now: float) -> None:
        """The domain's robots.txt comes first, on the domain's own slot; its arrival makes the
        domain ready."""
        if not robots.fetching(domain):
            if not robots.room():
                self._defer_robots(domain)
                self._wait_to_be_told(domain)  # until a fetch ends (``_bring_back_deferred``)
                return
            reservation = self.limiter.try_start(domain, robots_holder(domain))
            if reservation is not None:
                robots.claimed(domain, self._schemes.get(domain, "http"), reservation)
        if robots.fetching(domain):
            self._wait_to_be_told(domain)  # the rules reach the limiter, which tells this queue
        else:  # another process of a shared crawl took the slot first
            self._mark_waiting(domain, now + RECHECK_SECONDS)

    def _defer_robots(self, domain: str) -> None:
        """In line for a robots.txt fetch; a domain already in line keeps its place unless its
        priority rose."""
        priority = self.queues[domain].curprio
        live = self._deferred.get(domain)
        if live is None or priority < live[0]:
            entry = self._deferred[domain] = (priority, next(self._order))
            heapq.heappush(self._robots_deferred, (*entry, domain))

    def _bring_back_deferred(self, robots: RobotsService, now: float) -> None:
        """Start the robots.txt of deferred domains, in their order, while there is room."""
        deferred = self._robots_deferred
        while deferred and robots.room():
            priority, entry, domain = heapq.heappop(deferred)
            if self._deferred.get(domain) != (priority, entry):
                continue  # replaced by an entry of a higher priority
            del self._deferred[domain]
            if domain not in self.queues:
                continue
            if robots.ready(domain):  # its rules came another way (a shared crawl's cache)
                self._mark_ready(domain)
            else:
                self._start(domain, now)  # hands nothing out: the rules are not here

    def _evict_idle(self, now: float) -> None:
        self._next_sweep = now + min(self.idle_seconds, SWEEP_SECONDS)
        for domain in self.limiter.evict_idle(now, self.idle_seconds, keep=self.queues):
            self._served.pop(domain, None)
            self._schemes.pop(domain, None)
            if self.robots is not None:
                self.robots.forget(domain)

    def _wait(self, domain: str, now: float) -> None:
        """Until the domain's ready time, or, when only its concurrency holds it, until a slot
        finishes (which the limiter tells)."""
        ready_at = self.limiter.ready_at(domain)
        self._mark_waiting(domain, ready_at if ready_at > now else now + self._recheck_seconds(domain))

    def _recheck_seconds(self, domain: str) -> float:
        """In a shared crawl, within half the domain's delay: a request this process keeps (a
        soft-404 probe) whose slot another process took leaves at most half a delay after the
        slot came free, not up to a second (twice a 0.5 s host's delay)."""
        delay = self.limiter.effective_delay(domain)
        return min(RECHECK_SECONDS, delay / 2) if self.limiter.shared and delay > 0 else RECHECK_SECONDS

    def _wait_to_be_told(self, domain: str) -> None:
        """On neither index until the limiter says the domain may be ready (``_may_be_ready``)."""
        self._entry[domain] = next(self._order)  # an entry no index holds: the older ones are void

    def _mark_ready(self, domain: str) -> None:
        entry = self._entry[domain] = next(self._order)
        heapq.heappush(self._ready, (self.queues[domain].curprio, self._served.get(domain, -1), entry, domain))

    def _mark_waiting(self, domain: str, when: float) -> None:
        entry = self._entry[domain] = next(self._order)
        heapq.heappush(self._timeline, (when, entry, domain))

    def _may_be_ready(self, domain: str) -> None:
        if domain not in self.queues:
            return
        now = self.limiter.clock()
        ready_at = self.limiter.ready_at(domain)
        if ready_at > now:  # e.g. a request left: its successor's time is known now
            self._mark_waiting(domain, ready_at)
            self._wake_engine_at(ready_at, now)
        else:
            self._mark_ready(domain)

    def _next_ready(self) -> float | None:
        timeline = self._timeline
        while timeline and self._entry.get(timeline[0][2]) != timeline[0][1]:
            heapq.heappop(timeline)  # an entry a later one replaced
        times = [timeline[0][0]] if timeline else []
        if self.waiting:
            times.append(self.waiting[0][0])
        return min(times, default=None)

    def _wake_engine_at(self, when: float | None, now: float) -> None:
        if when is not None:
            self._wakeup.at(when - now)

    def drain(self) -> Iterator[Request]:
        """Every request still queued, ready or not, one at a time, leaving the queue empty."""
        while self.waiting:
            yield heapq.heappop(self.waiting)[2]
        for domain, queue in list(self.queues.items()):
            while (request := queue.pop()) is not None:
                yield request
            queue.close()
            del self.queues[domain]
        self._forget_domains()

    def _forget_domains(self) -> None:
        self.queues.clear()
        self._ready.clear()
        self._timeline.clear()
        self._entry.clear()
        self._size = len(self.waiting)

    def peek(self) -> Request | None:
        for queue in self.queues.values():
            return queue.peek()
        return None

    def close(self) -> dict[str, Any]:
        self._wakeup.cancel()
        while self.waiting:  # keep waiting retries in the persisted queues; they carry not_before
            self._enqueue(heapq.heappop(self.waiting)[2])
        state = {domain: queue.close() for domain, queue in self.queues.items()}
        self._forget_domains()
        self.limiter.unwatch(self._may_be_ready)
        return state

    def __len__(self) -> int:
        return self._size

    def queued(self, domain: str) -> int:
        """Requests of ``domain`` ready to be handed out (retries waiting for their time aside)."""
        queue = self.queues.get(domain)
        return len(queue) if queue is not None else 0

    def __contains__(self, domain: str) -> bool:
        return domain in self.queues

"""The politeness-aware frontier of a crawl shared by several processes: the domain-aware queue
class for scrapy-redis (``SCHEDULER_QUEUE_CLASS``).

Per-domain queues and a ready-time index live in Redis (``crawler.redis.store``); a pop hands out
only a request whose domain is ready, reserving its slot, whichever process asks (or one
whose slot comes within ``CRAWLER_HANDOUT_LEAD_SECONDS``, with the time it may leave, which the
download handler waits for). A popped
request is leased, not removed: it is acknowledged when its row is committed
(``rows_committed``), its lease is renewed while it is fetched or stored, and it goes back to
the queue if its lease expires first (a killed worker) or its callback fails, at most
``CRAWLER_MAX_DELIVERIES`` times; then it is a dead letter and an ``error`` row.

Scrapy asks its scheduler synchronously; Redis answers through the link's I/O thread. So the
queue keeps a few leased requests at hand (``CRAWLER_REDIS_PREFETCH``), refilled in the
background from the frontier's shards that may have work (``shard_choice``), and pushes are sent
in the link's next pipeline. While Redis is away, pushes wait in memory and pops hand out what
is at hand; both resume with it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
from scrapy import Request, Spider, signals
from scrapy.http import Response
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.httpobj import urlparse_cached
from scrapy_redis.queue import Base
from twisted.python.failure import Failure

from crawler.exitcodes import REASON_FRONTIER_LOST
from crawler.frontier.codec import RequestCodec, UnserializableRequest
from crawler.frontier.meta import NOT_BEFORE
from crawler.frontier.shard_choice import ShardChoice
from crawler.frontier.unfetched import record_outcome
from crawler.frontier.wakeup import EngineWakeup
from crawler.politeness.limiter_redis import RedisDomainLimiter
from crawler.politeness.slots import DOMAIN, HOLDER, LEAVE_AT, RESERVATION, domain_key
from crawler.redis.link import Op
from crawler.redis.store import FrontierSizes, FrontierStore, PopBatch, Popped, Pushed, Renewal, parse_pop
from crawler.services import CrawlServices
from crawler.signals import domain_blocked, request_not_sent, rows_committed

logger = logging.getLogger(__name__)

BEAT_SECONDS = 1.0
"""How often a worker refreshes the frontier's sizes (for idle decisions) and shows it is alive."""


@dataclass(frozen=True, slots=True)
class QueueEntry:
    """A request as the shared frontier queues it."""

    domain: str
    priority: int
    request: str
    not_before: float
    scheme: str
    seen: tuple[str, ...] | None

    @classmethod
    def of(cls, request: Request, codec: RequestCodec, seen: tuple[str, ...] | None = None) -> QueueEntry:
        """Raises ``UnserializableRequest`` for a request that cannot be shared."""
        encoded = codec.encode(request, lease_key(request))
        scheme = urlparse_cached(request).scheme
        return cls(domain_key(request), request.priority, encoded, request.meta.get(NOT_BEFORE) or 0.0, scheme, seen)

    def arguments(self, frontier: FrontierStore, *, lease_held: bool = False) -> list[Any]:
        return frontier.push_arguments(
            self.domain, self.priority, self.request, self.not_before, self.scheme, self.seen, lease_held=lease_held
        )

    def push_to(self, frontier: FrontierStore) -> bool:
        """False when the request was not queued (``Pushed``)."""
        return Pushed(frontier.call(*self.arguments(frontier))) is Pushed.QUEUED


def lease_key(request: Request) -> str:
    """The URL the request's row will carry: the first of its redirect chain."""
    return request.meta.get("redirect_urls", [request.url])[0]


class RedisFrontierQueue(Base):
    def __init__(self, server: redis.Redis, spider: Spider, key: str, serializer: Any = None):
        super().__init__(server, spider, key, serializer=json)
        crawler = spider.crawler
        services = CrawlServices.of(crawler)
        assert services.redis is not None, "the shared frontier needs REDIS_URL"
        self.crawler = crawler
        self.store = services.redis.store
        self.link = services.redis.link
        self.robots = services.robots
        self.scope = services.scope
        """The crawl's scope, made by the spider before the scheduler opens (None: none)."""
        settings = crawler.settings
        self.codec = RequestCodec(
            spider, settings.getlist("CRAWLER_REDIS_META_KEYS"), settings.getlist("CRAWLER_REDIS_LOCAL_META_KEYS")
        )
        self.poll_seconds = settings.getfloat("CRAWLER_REDIS_POLL_SECONDS")
        self.prefetch = max(1, settings.getint("CRAWLER_REDIS_PREFETCH"))
        self.lead = settings.getfloat("CRAWLER_HANDOUT_LEAD_SECONDS")
        self.renew_seconds = settings.getfloat("CRAWLER_LEASE_SECONDS") / 3
        self.stats = crawler.stats
        self.wakeup = EngineWakeup(crawler)
        self.at_hand: deque[Request] = deque()
        """Leased requests popped ahead, handed to the engine as it asks."""
        self.leased: dict[str, str] = {}
        """Lease keys this process holds (at hand or in the engine), with the domain each was
        handed out for (its lease lies in the domain's shard), renewed until their rows are
        stored; given back if it closes first."""
        self.lost_leases: set[str] = set()
        """Lease keys handed out again to another process while this one stood still (a renewal
        said so): that process follows their requests, retries and redirects included."""
        self.acking: dict[str, str] = {}
        """Lease keys whose rows are stored, until Redis has their acknowledgement: renewed
        meanwhile too (an outage of Redis must not let them expire)."""
        self.shard_choice = ShardChoice(
            self.store.shards, self.poll_seconds, settings.getfloat("CRAWLER_REDIS_EMPTY_POLL_SECONDS")
        )
        self.sizes = FrontierSizes(0, 0, 0, 0)
        self.sizes_at = -1.0
        """When the frontier was asked for ``sizes`` (monotonic time; -1: not yet)."""
        self._pushing = 0
        self._popping = 0
        """Shards asked for work whose answers have not come."""
        self._renewing = False
        self._pop_after = 0.0  # monotonic time before which a pop would find nothing ready
        self._jitter = random.Random().uniform
        self._mark_seen = False
        self._lost = False
        self._tasks: list[asyncio.Task[None]] = []
        # Leases that expired while Redis was away are renewed before a pop could reclaim them.
        self.link.first_on_retry.append(self._renewal)
        limiter = services.limiter
        assert isinstance(limiter, RedisDomainLimiter), "the shared frontier paces with the shared limiter"
        self.limiter = limiter
        limiter.watch(self.may_be_ready)
        crawler.signals.connect(self.rows_committed, signal=rows_committed)
        crawler.signals.connect(self.spider_error, signal=signals.spider_error)
        crawler.signals.connect(self.domain_blocked, signal=domain_blocked)
        crawler.signals.connect(self.request_not_sent, signal=request_not_sent)

    def start(self) -> None:
        """Begin the background work (on the reactor's loop): beats and lease renewal."""
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._every(BEAT_SECONDS, self._beat)),
            loop.create_task(self._every(self.renew_seconds, self._renew)),
        ]
        self._beat()

    # --- scrapy-redis queue interface -------------------------------------------------------------
    def push(
        self, request: Request, seen: tuple[str, ...] | None = None, on_seen: Callable[[], None] | None = None
    ) -> bool:
        """Queue ``request`` (in the link's next pipeline); with ``seen`` (``MarkedSeenFilter.marker``),
        only if it was not seen before: ``on_seen`` is called then. Raises
        ``UnserializableRequest`` for a request that cannot be shared."""
        entry = QueueEntry.of(request, self.codec, seen)
        key = lease_key(request)
        if key in self.lost_leases:  # a retry or redirect of it: left to that process, in whatever shard
            self.lost_leases.discard(key)
            self.stats.inc_value("frontier/lease_lost_before_pushed")
            return True
        self._pushing += 1

        def pushed(answer: Any) -> None:
            self._pushing -= 1
            outcome = Pushed(answer or 0)  # None: the script failed (logged), the request dropped
            if outcome is Pushed.LEASED_ELSEWHERE:
                self.leased.pop(key, None)
                self.stats.inc_value("frontier/lease_lost_before_pushed")
            elif outcome is Pushed.QUEUED:
                # A retry or redirect of a request leased here: its lease passed to the queue
                # (the push ended it in the new domain's shard; another shard's ends here).
                leased_for = self.leased.pop(key, None)
                if leased_for is not None and store.shard_of(leased_for) != store.shard_of(entry.domain):
                    self._ack({key: leased_for})
                self.shard_choice.may_be_ready(store.shard_of(entry.domain))
                self._pop_after = 0.0
            elif on_seen is not None:
                on_seen()

        store = self.store
        held = key in self.leased
        self.link.submit(
            Op(send=lambda pipe: store.call(*entry.arguments(store, lease_held=held), client=pipe), done=pushed)
        )
        return True

    def pop(self, timeout: int = 0) -> Request | None:
        if len(self.at_hand) < self.prefetch:
            self._fill()
        return self.at_hand.popleft() if self.at_hand else None

    def __len__(self) -> int:
        if not self.link.available:
            return max(1, len(self.at_hand))  # keep the worker alive until Redis is back
        return self.sizes.waiting + len(self.at_hand) + self._pushing

    def clear(self) -> None:
        self.store.clear()

    # --- popping ahead ---------------------------------------------------------------------------
    def _fill(self) -> None:
        if self._popping:
            return  # their answers wake the engine
        if (wait := self._pop_after - time.monotonic()) > 0:
            # The engine may have been woken sooner than that (a wake-up due first is kept, and a
            # domain that may be ready clears the wait): ask it again then, or it waits for its
            # own heartbeat, 5 s.
            self.wakeup.at(wait)
            return
        wanted = self.prefetch - len(self.at_hand)
        if self.robots is not None and (wanted := min(wanted, self.robots.room())) == 0:
            # Any of the requests popped may be a robots.txt claim, fetched at once: none until
            # a fetch ends, which wakes the engine (``RobotsService``).
            return
        asks = self.shard_choice.asks(time.monotonic(), wanted)
        if not asks:
            self._waiting()
            return
        self._popping = len(asks)
        if self.scope is not None:
            self.scope.refresh()  # seeds other processes added: the requests popped may link there
        store = self.store
        # The crawl's mark in the same round trip: after a flush the pop hands nothing out (what
        # it would find was pushed again since, and would be fetched twice), and this says why.
        self._check_mark()
        for shard, count in asks:
            self.link.submit(
                Op(
                    send=lambda pipe, shard=shard, count=count: store.call_in(
                        shard, *store.pop_arguments(count, self.lead), client=pipe
                    ),
                    done=lambda answer, shard=shard, count=count: self._popped(shard, count, answer),
                )
            )

    def _popped(self, shard: str, asked: int, answer: Any) -> None:
        self._popping -= 1
        if self._lost:
            return
        if answer is None:  # the script failed (logged): ask again later
            self.shard_choice.answered(shard, time.monotonic(), asked, 0, self.poll_seconds)
            self.wakeup.at(self.poll_seconds)
            return
        batch = parse_pop(answer)
        got = sum(popped.kind != "dead" for popped in batch.popped)
        self.shard_choice.answered(shard, time.monotonic(), asked, got, batch.wait)
        requests = []
        now = self.limiter.clock()
        for popped in batch.popped:
            if popped.kind == "robots":
                self._robots(popped.domain, popped.request, popped.reservation)
            elif popped.kind == "dead":
                self._dead_letter(popped)
            elif (request := self._decoded(popped.domain, popped.request, popped.reservation)) is not None:
                # Counted from this process's clock now, after the frontier's ``now``: never early.
                leave_at = now + popped.leave_in
                request.meta.update(
                    {
                        DOMAIN: popped.domain,
                        RESERVATION: popped.reservation,
                        HOLDER: lease_key(request),
                        LEAVE_AT: leave_at,
                    }
                )
                self.leased[lease_key(request)] = popped.domain
                self.lost_leases.discard(lease_key(request))
                if self.limiter.state(popped.domain).blocked_until > now:
                    self._give_back(popped.domain, [request])  # popped before this process's block reached Redis
                else:
                    requests.append(request)
        # What other processes made known of the domains and this one has not read, brought here
        # before their requests go: the pacing (the delay their robots.txt set), then the rules.
        domains = {request.meta[DOMAIN] for request in requests}
        self.limiter.load_unread(domains, done=lambda: self._with_rules(domains, requests, batch))

    def _with_rules(self, domains: set[str], requests: list[Request], batch: PopBatch) -> None:
        robots = self.robots
        missing = {domain for domain in domains if robots is not None and not robots.ready(domain)}
        if robots is not None and robots.shared_cache is not None and missing:
            robots.shared_cache.load(missing, done=lambda: self._at_hand(requests, batch))
        else:
            self._at_hand(requests, batch)

    def _at_hand(self, requests: list[Request], batch: PopBatch) -> None:
        self.at_hand.extend(requests)
        if requests or len(batch.popped):
            self.wakeup.at(0)
        elif not self._popping:
            self._waiting()

    def _waiting(self) -> None:
        """No shard had work: ask again when the first may have some."""
        wait = self.shard_choice.wait(time.monotonic())
        self._pop_after = time.monotonic() + wait
        self.wakeup.at(wait)

    def domain_blocked(self, domain: str, outcome: Any) -> None:
        """A 429 (or the like): requests of the domain popped ahead go back unstarted, their
        slots given back, rather than out before the block is known everywhere."""
        held = [request for request in self.at_hand if request.meta.get(DOMAIN) == domain]
        if held:
            self.at_hand = deque(request for request in self.at_hand if request.meta.get(DOMAIN) != domain)
            self._give_back(domain, held)

    def _give_back(self, domain: str, held: list[Request]) -> None:
        for request in held:
            self.limiter.unreserve(domain, request.meta.pop(RESERVATION))
            self.limiter.finish(domain, request.meta.pop(HOLDER))
            request.meta.pop(DOMAIN)
        self._release(
            {lease_key(request): self.leased.pop(lease_key(request), domain) for request in held}, returned=False
        )

    def may_be_ready(self, domain: str) -> None:
        """A request of this process left, or its slot finished or was given back: a pop may
        find work sooner than the frontier last said. A paced domain's shard is asked after a
        random part of the delay (at most the hand-out lead), which still hands its next request
        out before its slot: the other processes learn of the slot only when they ask, and the
        process whose request just left would otherwise take every slot of a lone domain."""
        delay = self.limiter.effective_delay(domain)
        after = self._jitter(0.0, min(self.lead, delay)) if delay > 0 else 0.0
        self.shard_choice.may_be_ready(self.store.shard_of(domain), time.monotonic() + after)
        self._pop_after = min(self._pop_after, time.monotonic() + after)
        self.wakeup.at(after)

    # --- leases ----------------------------------------------------------------------------------
    def rows_committed(self, urls: list[str]) -> None:
        done = {url: self.leased.pop(url) for url in urls if url in self.leased}
        if done:
            self._ack(done)

    def _ack(self, keys: dict[str, str]) -> None:
        """Acknowledge leases (key: the domain it was handed out for)."""
        self.acking.update(keys)
        store = self.store
        for shard, shard_keys in self._by_shard(keys).items():

            def acknowledged(_: Any, shard_keys: list[str] = shard_keys) -> None:
                for key in shard_keys:
                    self.acking.pop(key, None)
                self.stats.inc_value("frontier/acknowledged", len(shard_keys))

            self.link.submit(
                Op(
                    send=lambda pipe, shard=shard, shard_keys=shard_keys: store.ack_in(shard, shard_keys, pipe),
                    done=acknowledged,
                )
            )

    def _by_shard(self, keys: dict[str, str]) -> dict[str, list[str]]:
        """Lease keys grouped by the shard of the domain each was handed out for."""
        groups: defaultdict[str, list[str]] = defaultdict(list)
        for key, domain in keys.items():
            groups[self.store.shard_of(domain)].append(key)
        return groups

    def spider_error(self, failure: Failure, response: Response, spider: Spider) -> None:
        """A callback failed: its request comes back (for another worker, or this one later),
        counted against the delivery cap."""
        key = lease_key(response.request) if response.request is not None else None
        if key is None or key not in self.leased:
            return
        self.stats.inc_value("frontier/callback_failures")
        self._release({key: self.leased.pop(key)}, returned=True)

    def request_not_sent(self, request: Request) -> None:
        """A request of this process's did not leave before its job ended: back to the front of
        its queue for another process, not counted as a delivery (it never started)."""
        key = lease_key(request)
        if key in self.leased:
            self._release({key: self.leased.pop(key)}, returned=False)

    def _release(self, keys: dict[str, str], *, returned: bool) -> None:
        """Give leases back (key: the domain it was handed out for)."""
        store = self.store
        for shard, shard_keys in self._by_shard(keys).items():
            self.link.submit(
                Op(
                    send=lambda pipe, shard=shard, shard_keys=shard_keys: store.release_in(
                        shard, shard_keys, returned=returned, client=pipe
                    )
                )
            )

    def _renew(self) -> None:
        if not self._renewing and (op := self._renewal()) is not None:
            self._renewing = True
            self.link.submit(op)

    def _renewal(self) -> Op | None:
        """One operation renewing every lease held, shard by shard in one round trip."""
        groups = self._by_shard(self.leased | self.acking)
        if not groups:
            return None

        def renewed(renewals: list[Renewal] | None) -> None:
            self._renewing = False
            for renewal in renewals or ():
                self.stats.inc_value("frontier/lease_renewed", renewal.renewed)
                self._leases_taken(renewal.lost)

        store = self.store
        return Op(run=lambda _: [store.renew_in(shard, keys) for shard, keys in groups.items()], done=renewed)

    def _leases_taken(self, keys: list[str]) -> None:
        """Leases another process holds now: handed out again while this one stood still (a
        SIGSTOP, a frozen machine). Their rows come from there; this one neither renews, ends nor
        gives them back."""
        for key in keys:
            if self.leased.pop(key, None) is not None:
                self.lost_leases.add(key)
                self.stats.inc_value("frontier/lease_lost")

    def _beat(self) -> None:
        asked_at = time.monotonic()

        def sized(sizes: FrontierSizes | None) -> None:
            if sizes is not None:
                self.sizes = sizes
                self.sizes_at = asked_at

        store = self.store
        self.link.submit(Op(run=lambda _: store.sizes(beat=True), done=sized))
        self._check_mark()

    def _check_mark(self) -> None:
        born = self.store.key("born")
        self.link.submit(Op(send=lambda pipe: pipe.get(born), done=self._marked))

    def _marked(self, mark: Any) -> None:
        """The crawl's mark (set as the scheduler opened): gone, once seen, means the crawl's keys
        vanished while this process worked."""
        if mark is not None:
            self._mark_seen = True
        elif self._mark_seen and not self._lost:
            self._lost = True
            why = (
                f"the shared crawl {self.spider.crawl_id}'s keys vanished from Redis (flushed, or restarted "
                "without its data): its queue, leases and seen URLs are lost; see the README's 'Redis as a cache'"
            )
            logger.error("Closing the job (%s): %s", REASON_FRONTIER_LOST, why)
            self.stats.set_value("job/close_cause", why)
            engine = self.spider.crawler.engine
            if engine is not None:
                deferred_from_coro(engine.close_spider_async(reason=REASON_FRONTIER_LOST))

    @staticmethod
    async def _every(seconds: float, action: Callable[[], None]) -> None:
        while True:
            await asyncio.sleep(seconds)
            action()

    def release(self) -> None:
        """Give back the leases of requests this process will not finish (in the link's next
        pipeline); stop the background work."""
        for task in self._tasks:
            task.cancel()
        at_hand = {lease_key(request): request.meta[DOMAIN] for request in self.at_hand}
        in_flight = {key: domain for key, domain in self.leased.items() if key not in at_hand}
        if at_hand:
            self._release(at_hand, returned=False)
        if in_flight:
            self._release(in_flight, returned=True)
        if self.leased:
            logger.info("Giving %d unfinished requests back to the shared frontier", len(self.leased))
        self.at_hand.clear()
        self.leased.clear()

    # --- internals -------------------------------------------------------------------------------
    def _robots(self, domain: str, scheme: str, reservation: str) -> None:
        if self.robots is not None and self.robots.claimed(domain, scheme, reservation):
            self.stats.inc_value("frontier/robots_fetches")

    def _decoded(self, domain: str, encoded: str, reservation: str) -> Request | None:
        try:
            return self.codec.decode(encoded)[1]
        except (ValueError, UnserializableRequest) as exc:
            key = encoded.partition("\t")[0]
            logger.error("Dropping an unreadable request from the shared frontier (%s): %r", exc, encoded[:200])
            self.stats.inc_value("frontier/unreadable")
            self._row(key, f"unreadable in the shared frontier: {exc}")
            self.limiter.unreserve(domain, reservation)  # nothing was sent on its slot
            self.limiter.finish(domain, key)
            self._ack({key: domain})
            return None

    def _dead_letter(self, popped: Popped) -> None:
        key = popped.request.partition("\t")[0]
        cap = self.store.config.max_deliveries
        logger.error("A request came back unfinished %d times: a dead letter now: %s", cap, key)
        self.stats.inc_value("frontier/dead_letters")
        self._row(
            key, f"dead letter: handed out {cap} times without completing (its callback failed or its worker died)"
        )

    def _row(self, key: str, error: str) -> None:
        try:
            record_outcome(self.crawler, Request(key), "error", error)
        except ValueError:
            logger.error("No row for %r: not a URL", key)

"""The frontier's hand-out rules, one suite run against both frontiers: the queue of a crawl in
one process (``PolitePriorityQueue`` and ``DomainLimiter``) and the one in Redis that processes
share (the crawl store's script and ``RedisDomainLimiter``). Same requests, same fake clock, same
answers. What only one of them has is tested beside it: the indexes of the local queue in
``test_frontier_queue``, leases, dead letters and several processes in ``test_frontier_redis``."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

import pytest
import redis
from scrapy import Request, Spider
from scrapy.squeues import FifoMemoryQueue
from scrapy.utils.test import get_crawler

from crawler.frontier.meta import NOT_BEFORE
from crawler.frontier.queue_local import PolitePriorityQueue
from crawler.politeness.limiter_local import DomainLimiter
from crawler.politeness.limiter_redis import RedisDomainLimiter
from crawler.politeness.policy import Policy, PolicyConfig
from crawler.politeness.slots import DOMAIN, HOLDER, RESERVATION
from tests.helpers import FakeClock, policy_store


@dataclass(frozen=True, slots=True)
class Handed:
    url: str
    domain: str
    holder: str
    reservation: Any
    leave_at: float
    """When the download handler lets it leave (a request handed out ahead of its slot waits)."""


class Frontier(Protocol):
    clock: FakeClock
    limiter: DomainLimiter
    send_window: float
    """How long a slot waits for its request to leave before the domain goes on without it."""

    def push(self, url: str, priority: int = 0, not_before: float = 0.0) -> None: ...
    def pop(self) -> Handed | None: ...


class LocalFrontier:
    def __init__(self, clock: FakeClock, config: PolicyConfig):
        self.clock = clock
        self.limiter = DomainLimiter(Policy(config), clock)
        self.queue = PolitePriorityQueue(get_crawler(Spider), FifoMemoryQueue, "", limiter=self.limiter)
        self.send_window = config.send_timeout

    def push(self, url: str, priority: int = 0, not_before: float = 0.0) -> None:
        self.queue.push(Request(url, priority=priority, meta={NOT_BEFORE: not_before} if not_before else {}))

    def pop(self) -> Handed | None:
        request = self.queue.pop()
        if request is None:
            return None
        meta, domain = request.meta, request.meta[DOMAIN]
        return Handed(request.url, domain, meta[HOLDER], meta[RESERVATION], self.limiter.departure_at(domain))


class RedisFrontier:
    SEND_WINDOW = 10.0  # frontier.lua's

    def __init__(self, clock: FakeClock, config: PolicyConfig, client: redis.Redis, crawl: str):
        self.clock = clock
        self.store = policy_store(client, crawl, Policy(config), clock, lease_seconds=600.0)
        self.lead = config.handout_lead
        # The script applies the lead, as the crawl's services set it up.
        self.limiter = RedisDomainLimiter(Policy(replace(config, handout_lead=0.0)), self.store)
        self.send_window = self.SEND_WINDOW

    def push(self, url: str, priority: int = 0, not_before: float = 0.0) -> None:
        self.store.push(url.split("/")[2], priority, f"{url}\t{{}}", not_before=not_before)

    def pop(self) -> Handed | None:
        popped = self.store.pop(self.lead)
        if popped.kind != "request":
            return None
        url = popped.request.partition("\t")[0]
        leave_at = max(self.clock() + popped.leave_in, self.limiter.departure_at(popped.domain))
        return Handed(url, popped.domain, url, popped.reservation, leave_at)


@pytest.fixture(params=["local", pytest.param("redis", marks=pytest.mark.redis)])
def make(request: pytest.FixtureRequest, clock: FakeClock):
    """Build the frontier under test with a policy of the given settings."""

    def build(**config: Any) -> Frontier:
        policy = PolicyConfig(**{"default_delay": 1.0, **config})
        if request.param == "local":
            return LocalFrontier(clock, policy)
        return RedisFrontier(
            clock, policy, request.getfixturevalue("redis_client"), request.getfixturevalue("crawl_name")
        )

    return build


def _leaves(frontier: Frontier, handed: Handed) -> Handed:
    """The request leaves for the network now."""
    frontier.limiter.sent(handed.domain)
    return handed


def _finishes(frontier: Frontier, handed: Handed) -> None:
    frontier.limiter.finish(handed.domain, handed.holder)


def _sent_urls(frontier: Frontier) -> list[str]:
    """Pop until nothing is ready, each request leaving at once and finishing."""
    urls = []
    while (handed := frontier.pop()) is not None:
        _finishes(frontier, _leaves(frontier, handed))
        urls.append(handed.url)
    return urls


def test_a_domain_s_requests_come_highest_priority_first_then_first_in_first_out(make, clock: FakeClock) -> None:
    frontier = make()
    for url, priority in [("http://a/1", 100), ("http://a/2", 300), ("http://a/3", 100), ("http://a/4", 300)]:
        frontier.push(url, priority)
    order = []
    for _ in range(4):
        order += _sent_urls(frontier)
        clock.now += 1.0
    assert order == ["http://a/2", "http://a/4", "http://a/1", "http://a/3"]


def test_a_domain_is_handed_out_only_when_its_slot_comes_and_holds_up_no_other(make, clock: FakeClock) -> None:
    frontier = make()
    for n in range(3):
        frontier.push(f"http://a/{n}")
    frontier.push("http://b/0")
    assert sorted(_sent_urls(frontier)) == ["http://a/0", "http://b/0"]
    clock.now += 0.999
    assert frontier.pop() is None
    clock.now += 0.001
    assert _sent_urls(frontier) == ["http://a/1"]


def test_the_delay_counts_from_when_the_request_left(make, clock: FakeClock) -> None:
    frontier = make()
    for n in range(2):
        frontier.push(f"http://a/{n}")
    first = frontier.pop()
    assert first is not None
    clock.now += 5.0  # held up before the network for longer than the delay
    assert frontier.pop() is None
    _leaves(frontier, first)
    clock.now += 0.999
    assert frontier.pop() is None
    clock.now += 0.001
    assert frontier.pop() is not None


def test_with_a_lead_the_next_request_is_handed_out_before_its_slot_and_leaves_on_it(make, clock: FakeClock) -> None:
    frontier = make(handout_lead=0.25)
    for n in range(2):
        frontier.push(f"http://a/{n}")
    first = frontier.pop()
    assert first is not None and frontier.pop() is None  # its request has not left: no slot is known
    _leaves(frontier, first)
    clock.now += 0.7
    assert frontier.pop() is None
    clock.now += 0.05
    second = frontier.pop()
    assert second is not None and second.url == "http://a/1"
    assert second.leave_at == pytest.approx(clock.now + 0.25)  # the slot: a delay after the first left


def test_concurrency_limits_the_requests_in_flight_and_a_finish_frees_a_slot(make, clock: FakeClock) -> None:
    frontier = make(default_delay=0.0, base_concurrency=2)
    for n in range(4):
        frontier.push(f"http://a/{n}")
    first, second = frontier.pop(), frontier.pop()
    assert first is not None and second is not None
    _leaves(frontier, first)
    _leaves(frontier, second)
    assert frontier.pop() is None  # two in flight: the limit
    _finishes(frontier, second)
    third = frontier.pop()
    assert third is not None and third.url == "http://a/2"


def test_a_slot_given_back_before_its_request_left_makes_the_domain_ready_at_once(make, clock: FakeClock) -> None:
    frontier = make()
    for n in range(2):
        frontier.push(f"http://a/{n}")
    dropped = frontier.pop()  # dropped before it left (robots.txt, a filter)
    assert dropped is not None and frontier.pop() is None
    frontier.limiter.unreserve(dropped.domain, dropped.reservation)
    _finishes(frontier, dropped)
    assert _sent_urls(frontier) == ["http://a/1"]


def test_a_block_holds_the_domain_until_it_ends(make, clock: FakeClock) -> None:
    frontier = make(default_delay=0.0)
    for n in range(3):
        frontier.push(f"http://a/{n}")
    answered = _leaves(frontier, frontier.pop())  # type: ignore[arg-type]
    frontier.limiter.blocked("a", retry_after=7)  # its answer: 429, Retry-After 7
    _finishes(frontier, answered)
    assert frontier.pop() is None
    clock.now += 6.99
    assert frontier.pop() is None
    clock.now += 0.01
    assert frontier.pop() is not None


def _two_on_their_way_and_a_block(make, clock: FakeClock) -> tuple[Frontier, Handed, float]:
    """Two requests of a domain left at once; one is answered 429 (its slot given back), the
    other is still on its way. The frontier, that other request and when both left."""
    frontier = make(default_delay=0.0)
    for n in range(3):
        frontier.push(f"http://a/{n}")
    left_at = clock.now
    one, two = _leaves(frontier, frontier.pop()), _leaves(frontier, frontier.pop())  # type: ignore[arg-type]
    clock.now += 0.2
    frontier.limiter.blocked("a", retry_after=30)
    _finishes(frontier, one)
    assert frontier.pop() is None
    return frontier, two, left_at


def test_a_success_of_a_request_on_its_way_when_the_block_came_leaves_the_block(make, clock: FakeClock) -> None:
    frontier, two, left_at = _two_on_their_way_and_a_block(make, clock)
    clock.now += 0.3
    frontier.limiter.success("a", sent_at=left_at)  # answered after the 429: no news of the site since
    _finishes(frontier, two)
    assert frontier.pop() is None
    clock.now = left_at + 0.2 + 30
    assert _sent_urls(frontier) == ["http://a/2"]


def test_a_success_of_a_request_that_left_after_the_block_clears_it_at_once(make, clock: FakeClock) -> None:
    frontier, two, _ = _two_on_their_way_and_a_block(make, clock)
    _finishes(frontier, two)
    clock.now += 0.1
    frontier.limiter.success("a", sent_at=clock.now - 0.05)  # another process's, sent after the 429
    assert _sent_urls(frontier) == ["http://a/2"]


def test_a_refusal_of_a_request_on_its_way_when_the_block_came_is_not_learned_twice(make, clock: FakeClock) -> None:
    frontier, two, left_at = _two_on_their_way_and_a_block(make, clock)
    limiter = frontier.limiter
    delay, streak = limiter.effective_delay("a"), limiter.state("a").blocking_streak
    clock.now += 0.3
    limiter.blocked("a", sent_at=left_at)  # the other one, refused too: the same refusal
    _finishes(frontier, two)
    assert (limiter.effective_delay("a"), limiter.state("a").blocking_streak) == (delay, streak)
    assert frontier.pop() is None
    clock.now = left_at + 0.2 + 30  # once the first refusal's Retry-After is out
    assert _sent_urls(frontier) == ["http://a/2"]


def test_a_retry_waits_for_its_time(make, clock: FakeClock) -> None:
    frontier = make()
    frontier.push("http://a/retry", not_before=clock.now + 5)
    assert frontier.pop() is None
    clock.now += 4.9
    assert frontier.pop() is None
    clock.now += 0.1
    assert _sent_urls(frontier) == ["http://a/retry"]


def test_a_request_that_never_leaves_holds_its_domain_only_for_the_send_window(make, clock: FakeClock) -> None:
    frontier = make()
    for n in range(2):
        frontier.push(f"http://a/{n}")
    assert frontier.pop() is not None  # its worker stalls before sending it
    clock.now += frontier.send_window - 0.01
    assert frontier.pop() is None
    clock.now += 0.01
    assert frontier.pop() is not None

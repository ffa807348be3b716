"""The frontier in Redis, with a fake clock, on what only it has: leases, dead letters, seen marks,
and several processes (two ``FrontierStore`` objects on the same keys stand for two). The rules
both frontiers share are ``test_frontier_contract``'s."""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path

import pytest
import redis
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.squeues import FifoMemoryQueue
from scrapy.utils.test import get_crawler

import crawler.redis
from crawler.download.held_slot import HeldSlotCheck
from crawler.exceptions import NotSent
from crawler.frontier.queue_local import PolitePriorityQueue
from crawler.frontier.queue_redis import RedisFrontierQueue
from crawler.middlewares.limiter import LimiterMiddleware
from crawler.politeness.limiter_redis import GRANT_FRESH_SECONDS, RedisDomainLimiter
from crawler.politeness.policy import Policy, PolicyConfig
from crawler.politeness.slots import LEAVE_AT, SEND_WINDOW, stale_after
from crawler.redis.link import Op, RedisLink
from crawler.redis.store import FrontierConfig, FrontierStore, Pushed, Renewal
from crawler.services import CrawlServices
from crawler.signals import request_not_sent
from tests.conftest import REDIS_URL
from tests.helpers import FakeClock, PageSpider, crawl_keys, project_settings


def _frontier(client: redis.Redis, name: str, clock: FakeClock, **config) -> FrontierStore:
    settings = {"default_delay": 1.0, "default_concurrency": 2, "robots": False, "lease_seconds": 30.0, **config}
    return FrontierStore(client, crawl_keys(name), FrontierConfig(**settings), clock=clock)


@pytest.fixture
def frontier(redis_client: redis.Redis, crawl_name: str, clock: FakeClock) -> FrontierStore:
    return _frontier(redis_client, crawl_name, clock)


def _push(frontier: FrontierStore, url: str, priority: int = 0, **options) -> None:
    domain = url.split("/")[2]
    frontier.push(domain, priority, f"{url}\t{{}}", **options)


def _popped_url(frontier: FrontierStore) -> str | None:
    """The next request's URL; the request leaves at once (``sent``)."""
    popped = frontier.pop()
    if popped.kind != "request":
        return None
    frontier.sent(popped.domain)
    return popped.request.partition("\t")[0]


def test_with_a_lead_a_request_is_handed_out_before_its_slot_with_the_time_it_may_leave(
    frontier: FrontierStore, clock: FakeClock
) -> None:
    for n in range(2):
        _push(frontier, f"http://a/{n}")
    first = frontier.pop(lead=0.25)
    assert first.kind == "request" and first.leave_in == 0.0
    assert frontier.pop(lead=0.25).kind == "none"  # its request has not left: no slot is known
    frontier.sent("a")
    clock.now += 0.7
    waiting = frontier.pop(lead=0.25)
    assert waiting.kind == "none" and waiting.next_ready == pytest.approx(1_000.75)
    clock.now += 0.05
    second = frontier.pop(lead=0.25)
    assert second.kind == "request" and second.leave_in == pytest.approx(0.25)
    assert second.reservation == f"{1_001.0 + 10:.6f}"  # held from the slot until it leaves


def test_the_next_slot_counts_from_when_the_request_left_not_from_when_redis_heard_of_it(
    frontier: FrontierStore, clock: FakeClock
) -> None:
    for n in range(2):
        _push(frontier, f"http://a/{n}")
    assert frontier.pop().kind == "request"
    clock.now += 0.3
    frontier.sent("a", ago=0.1)  # it left 0.1 s before the worker's report reached Redis
    waiting = frontier.pop()
    assert waiting.kind == "none" and waiting.next_ready == pytest.approx(1_001.2)


def test_a_lead_does_not_hand_out_ahead_of_a_block_or_a_full_concurrency(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    frontier = _frontier(redis_client, crawl_name, clock, default_delay=0.0, default_concurrency=1)
    for n in range(2):
        _push(frontier, f"http://a/{n}")
    assert frontier.pop(lead=0.25).kind == "request"
    clock.now += 29.8  # within the lead of the lease's end, which frees the one slot
    waiting = frontier.pop(lead=0.25)
    assert waiting.kind == "none" and waiting.next_ready == pytest.approx(1_030.0)
    frontier.update("a", {"hold": repr(1_040.0)})  # blocked (a 429) until then
    clock.now += 10.0
    waiting = frontier.pop(lead=0.25)
    assert waiting.kind == "none" and waiting.next_ready == pytest.approx(1_040.0)


def test_two_processes_never_share_a_slot(redis_client: redis.Redis, crawl_name: str, clock: FakeClock) -> None:
    one, two = _frontier(redis_client, crawl_name, clock), _frontier(redis_client, crawl_name, clock)
    for n in range(10):
        _push(one, f"http://a/{n}")
    starts = []
    for _ in range(40):
        for process in (one, two):
            url = _popped_url(process)
            if url is not None:
                starts.append(clock.now)
                process.finish("a", url)
        clock.now += 0.25
    assert len(starts) == 10
    assert min(b - a for a, b in zip(starts, starts[1:])) >= 1.0


def test_concurrency_is_counted_across_processes_and_freed_by_finish(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    one = _frontier(redis_client, crawl_name, clock, default_delay=0.0)
    two = _frontier(redis_client, crawl_name, clock, default_delay=0.0)
    for n in range(4):
        _push(one, f"http://a/{n}")
    assert _popped_url(one) == "http://a/0"
    assert _popped_url(two) == "http://a/1"
    assert one.pop().kind == two.pop().kind == "none"  # two in flight: the limit
    two.finish("a", "http://a/1")
    assert _popped_url(one) == "http://a/2"


def _taking_turns(client: redis.Redis, name: str, clock: FakeClock) -> tuple[FrontierStore, FrontierStore]:
    """Two processes of a crawl whose domains take one request at a time, with no delay, that
    ask again within 0.25 s when they found nothing: the first holds the slot of ``a`` (a/0 of
    a/0 … a/3), the second has found nothing since 1000."""
    settings = {"default_delay": 0.0, "default_concurrency": 1, "turn_seconds": 0.25}
    one, two = (_frontier(client, name, clock, **settings) for _ in range(2))
    for n in range(4):
        _push(one, f"http://a/{n}")
    assert _popped_url(one) == "http://a/0"
    assert two.pop().kind == "none"
    return one, two


def test_a_slot_freed_at_full_concurrency_is_left_to_the_process_that_found_nothing(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    one, two = _taking_turns(redis_client, crawl_name, clock)
    clock.now += 0.05
    one.finish("a", "http://a/0")
    waiting = one.pop()  # at once, as its request finished: two's turn
    assert waiting.kind == "none" and waiting.next_ready == pytest.approx(1_000.3)
    clock.now += 0.1
    assert _popped_url(two) == "http://a/1"
    two.finish("a", "http://a/1")
    assert two.pop().kind == "none"  # one has found nothing since 1000.05: its turn
    assert _popped_url(one) == "http://a/2"


def test_a_turn_not_taken_within_the_turn_time_goes_to_whoever_asks(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    one, two = _taking_turns(redis_client, crawl_name, clock)
    one.finish("a", "http://a/0")
    assert one.pop().kind == "none"
    clock.now += 0.25
    assert _popped_url(one) == "http://a/1"


def test_a_process_that_stopped_asking_has_no_turn(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    one, two = _taking_turns(redis_client, crawl_name, clock)
    clock.now += 0.51  # two has not asked for over twice the turn time: stopped, paused or gone
    one.finish("a", "http://a/0")
    assert _popped_url(one) == "http://a/1"


def _one_at_a_time_handed_out(client: redis.Redis, name: str, clock: FakeClock) -> tuple[FrontierStore, FrontierStore]:
    """Two processes of a crawl whose domains take one request at a time; the first has been
    handed http://a/0, which does not leave (its process stopped)."""
    mine, other = (_frontier(client, name, clock, default_concurrency=1) for _ in range(2))
    _push(mine, "http://a/0")
    assert mine.pop().kind == "request"
    return mine, other


def test_a_request_whose_slot_went_stale_takes_a_fresh_one_keeping_its_share_of_the_concurrency(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    mine, other = _one_at_a_time_handed_out(redis_client, crawl_name, clock)
    _push(mine, "http://a/1")
    assert mine.try_reserve("a", "http://a/0", stale=True) is None  # its slot is held for it (the send window)
    clock.now += 10.0  # the hold is over, and the request still holds the domain's one slot at a time
    assert other.pop().kind == "none" and other.try_reserve("a", "probe") is None
    # A holder of the same name that is not this stale request gets no share of it.
    assert other.try_reserve("a", "http://a/0") is None
    assert mine.try_reserve("a", "http://a/0", stale=True) == f"{1_020.0:.6f}"  # held until it leaves
    assert other.try_reserve("a", "probe") is None  # still one at a time


def test_a_stale_request_handed_out_again_meanwhile_still_waits_the_delay_after_the_other_copy(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    mine, other = _one_at_a_time_handed_out(redis_client, crawl_name, clock)
    clock.now += 30.0  # its lease expired: back in the queue, the slot free
    assert _popped_url(other) == "http://a/0"  # handed out again, and left at 1030
    clock.now += 0.5
    assert mine.try_reserve("a", "http://a/0", stale=True) is None
    clock.now += 0.5
    # Both copies go by one name: the other's hold passes for this one's (one over the
    # concurrency while both are in flight, a known limit), never the delay.
    assert mine.try_reserve("a", "http://a/0", stale=True) == f"{1_041.0:.6f}"


def test_a_request_leaves_on_its_slot_only_well_within_the_frontier_s_send_window() -> None:
    lua = (Path(crawler.redis.__file__).parent / "frontier.lua").read_text()
    send_window = float(re.search(r"^local SEND_WINDOW = ([0-9.]+)$", lua, re.M).group(1))  # type: ignore[union-attr]
    assert SEND_WINDOW == send_window
    assert stale_after(1.0) == send_window / 2 and stale_after(60.0) == 60.0 - send_window / 2


def test_an_expired_lease_goes_back_to_the_front_and_frees_its_slot(frontier: FrontierStore, clock: FakeClock) -> None:
    _push(frontier, "http://a/0")
    _push(frontier, "http://a/1")
    assert _popped_url(frontier) == "http://a/0"  # and never acknowledged: its worker died
    clock.now += 1.0
    assert _popped_url(frontier) == "http://a/1"
    frontier.ack(["http://a/1"], "a")
    clock.now += 28.9  # at 1029.9: a/0 leased at 1000 for 30 s
    assert frontier.pop().kind == "none"
    clock.now += 0.1  # its lease expires
    assert _popped_url(frontier) == "http://a/0"
    sizes = frontier.sizes()
    assert (sizes.queued, sizes.leased, sizes.reclaimed) == (0, 1, 1)


def _lease_handed_to_another(client: redis.Redis, name: str, clock: FakeClock) -> tuple[FrontierStore, FrontierStore]:
    """Two processes: the first was handed http://a/0, then stood still past its lease, and the
    second was handed it."""
    stopped, other = _frontier(client, name, clock), _frontier(client, name, clock)
    _push(stopped, "http://a/0")
    assert _popped_url(stopped) == "http://a/0"  # then the process stands still past its lease
    clock.now += 31.0
    assert _popped_url(other) == "http://a/0"  # reclaimed and handed out again
    return stopped, other


def test_a_lease_handed_out_again_is_the_new_holder_s_alone(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    stopped, other = _lease_handed_to_another(redis_client, crawl_name, clock)
    leases = f"{stopped.shard_of('a')}:leases"
    expiry = redis_client.zscore(leases, "http://a/0")
    clock.now += 5.0  # the stopped process goes on
    assert stopped.renew(["http://a/0"], "a") == Renewal(0, ["http://a/0"])
    stopped.ack(["http://a/0"], "a")  # its own fetch ended: the other's lease stays
    stopped.release(["http://a/0"], "a", returned=False)
    assert redis_client.zscore(leases, "http://a/0") == expiry
    assert stopped.sizes().queued == 0  # not put back behind the other's back
    assert other.renew(["http://a/0"], "a") == Renewal(1, [])
    other.ack(["http://a/0"], "a")
    assert stopped.sizes().leased == 0
    assert redis_client.hlen(f"{stopped.shard_of('a')}:owners") == 0


def test_a_request_finished_after_its_lease_went_to_another_process_leaves_that_one_s_share(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    stopped, other = _lease_handed_to_another(redis_client, crawl_name, clock)
    inflight = f"{stopped.shard_of('a')}:inflight:a"
    stopped.finish("a", "http://a/0")  # the answer to its request, sent before it stood still
    assert redis_client.zrange(inflight, 0, -1) == [b"http://a/0"]  # the other's share
    other.finish("a", "http://a/0")
    assert redis_client.zrange(inflight, 0, -1) == []


def test_a_retry_or_redirect_of_a_lease_that_went_to_another_process_is_left_to_that_one(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    stopped, other = _lease_handed_to_another(redis_client, crawl_name, clock)
    leases = f"{stopped.shard_of('a')}:leases"
    expiry = redis_client.zscore(leases, "http://a/0")
    seen = ("set", stopped.key("seen", "7"), "-1234567890123")
    assert not stopped.push("a", 0, "http://a/0\t{}", lease_held=True)  # a retry of its answer from before the stop
    assert not stopped.push("a", 0, 'http://a/0\t{"url": "http://a/1"}', seen=seen, lease_held=True)  # a redirect
    assert redis_client.zscore(leases, "http://a/0") == expiry  # the other's lease goes on
    assert not redis_client.sismember(seen[1], seen[2])  # the other's redirect will be queued
    assert stopped.sizes().queued == 0
    link_seen = ("set", stopped.key("seen", "8"), "-42")
    redis_client.sadd(link_seen[1], link_seen[2])  # http://a/0, seen since it was first queued
    found = stopped.push_arguments("a", 0, "http://a/0\t{}", 0.0, "http", link_seen)  # a link found on a page
    assert Pushed(stopped.call(*found)) is Pushed.SEEN
    assert other.push("a", 0, "http://a/0\t{}", lease_held=True)  # its own retry takes its lease's place
    assert (stopped.sizes().queued, stopped.sizes().leased) == (1, 0)


def test_a_lease_expired_and_not_handed_out_again_is_not_renewed(frontier: FrontierStore, clock: FakeClock) -> None:
    _push(frontier, "http://a/0")
    assert _popped_url(frontier) == "http://a/0"
    clock.now += 31.0
    frontier.call_in(frontier.shard_of("a"), *frontier.pop_arguments(0, 0.0))  # reclaims it, hands out none
    assert not frontier.client.hexists(f"{frontier.shard_of('a')}:owners", "http://a/0")  # nobody's
    assert frontier.renew(["http://a/0"], "a") == Renewal(0, [])
    assert frontier.sizes().queued == 1


def test_acknowledged_requests_are_gone_for_good(frontier: FrontierStore, clock: FakeClock) -> None:
    _push(frontier, "http://a/0")
    assert _popped_url(frontier) == "http://a/0"
    frontier.finish("a", "http://a/0")
    frontier.ack(["http://a/0"], "a")
    clock.now += 1_000
    assert frontier.pop().kind == "none"
    assert frontier.sizes().empty


def test_a_retry_takes_the_place_of_its_lease_and_waits_for_its_time(frontier: FrontierStore, clock: FakeClock) -> None:
    _push(frontier, "http://a/0")
    assert _popped_url(frontier) == "http://a/0"
    frontier.finish("a", "http://a/0")
    _push(frontier, "http://a/0", not_before=clock.now + 5)
    sizes = frontier.sizes()
    assert (sizes.delayed, sizes.leased) == (1, 0)
    clock.now += 4.9
    assert frontier.pop().kind == "none"
    clock.now += 0.1
    assert _popped_url(frontier) == "http://a/0"


def test_released_leases_come_back_at_once(frontier: FrontierStore, clock: FakeClock) -> None:
    _push(frontier, "http://a/0")
    _push(frontier, "http://a/1")
    assert _popped_url(frontier) == "http://a/0"
    frontier.release(["http://a/0"], "a")
    clock.now += 1.0
    assert _popped_url(frontier) == "http://a/0"


def test_robots_txt_is_fetched_once_for_all_processes(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    one = _frontier(redis_client, crawl_name, clock, robots=True)
    two = _frontier(redis_client, crawl_name, clock, robots=True)
    _push(one, "http://a/0")
    claim = one.pop()
    assert (claim.kind, claim.domain, claim.request) == ("robots", "a", "http")
    one.sent("a")  # the fetch of robots.txt leaves
    clock.now += 5
    assert two.pop().kind == "none"  # another process fetches it: wait
    one.robots_stored("a", clock.now + 3600)
    assert _popped_url(two) == "http://a/0"


def test_a_worker_whose_crawl_s_keys_vanished_reserves_nothing_in_their_place(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    lost = _frontier(redis_client, crawl_name, clock, robots=True)
    lost.begin()
    lost.delete_all(keep=set())  # flushed: every key of the crawl and of its shards
    _push(lost, "http://a/0")  # a link of a page fetched before the worker noticed
    assert lost.pop().kind == "none"
    assert lost.try_reserve("a", "sitemap") is None
    assert not redis_client.exists(lost.domain_part("a", "inflight", "a"))
    again = _frontier(redis_client, crawl_name, clock, robots=True)
    again.begin()  # the crawl started again: its domain's robots.txt at once, not a lease time later
    assert (again.pop().kind, again.try_reserve("b", "sitemap") is not None) == ("robots", True)


def test_separate_crawls_do_not_see_each_other(redis_client: redis.Redis, crawl_name: str, clock: FakeClock) -> None:
    one = _frontier(redis_client, crawl_name, clock)
    other = _frontier(redis_client, crawl_name + "-other", clock)
    try:
        _push(one, "http://a/0")
        assert other.pop().kind == "none" and other.sizes().empty
        assert _popped_url(one) == "http://a/0"
    finally:
        other.clear()


def test_a_429_seen_by_one_process_blocks_the_domain_for_all(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    frontier_one = _frontier(redis_client, crawl_name, clock, default_delay=0.0)
    frontier_two = _frontier(redis_client, crawl_name, clock, default_delay=0.0)
    policy = Policy(PolicyConfig(default_delay=0.0))
    limiter_one = RedisDomainLimiter(policy, frontier_one)
    for n in range(4):
        _push(frontier_one, f"http://a/{n}")
    assert _popped_url(frontier_two) == "http://a/0"
    limiter_one.finish("a", "http://a/0")
    limiter_one.blocked("a", retry_after=7)
    assert frontier_two.pop().kind == "none"
    clock.now += 6.99
    assert frontier_two.pop().kind == "none"
    clock.now += 0.01
    assert _popped_url(frontier_two) == "http://a/1"
    # and the delay learned from the 429 paces every process
    limiter_two = RedisDomainLimiter(policy, frontier_two)
    limiter_two.refresh("a")  # its copy of the domain's state, from Redis
    assert limiter_two.effective_delay("a") == pytest.approx(0.05)


def test_when_a_block_came_is_kept_apart_from_the_json_a_worker_of_an_earlier_release_reads(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    policy = Policy(PolicyConfig(default_delay=0.0))
    store = _frontier(redis_client, crawl_name, clock, default_delay=0.0)
    RedisDomainLimiter(policy, store).blocked("a", retry_after=7)
    key = store.domain_key("a")
    assert "blocked_at" not in json.loads(redis_client.hget(key, "state"))
    assert float(redis_client.hget(key, "blocked_at")) == clock.now
    other = RedisDomainLimiter(policy, _frontier(redis_client, crawl_name, clock, default_delay=0.0))
    other.refresh("a")
    assert other.state("a").blocked_at == clock.now
    clock.now += 0.5
    other.success("a", sent_at=clock.now - 0.6)  # on its way before the 429 was read: the block stands
    assert other.state("a").blocked_until == clock.now + 6.5
    assert float(redis_client.hget(key, "hold")) == clock.now + 6.5


def test_a_process_reads_the_pacing_of_a_domain_another_one_started_before_its_first_request(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    policy = Policy(PolicyConfig(default_delay=1.0))
    fetcher = RedisDomainLimiter(policy, _frontier(redis_client, crawl_name, clock))
    fetcher.set_robots_delay("a", 0.5)  # the process that fetched robots.txt
    other = RedisDomainLimiter(policy, _frontier(redis_client, crawl_name, clock))
    loaded: list[str] = []
    other.load_unread({"a"}, done=lambda: loaded.append("a"))
    assert loaded == ["a"] and other.effective_delay("a") == 0.5
    assert other.sent("a") == 0.5  # the delay recorded in force as its first request leaves
    fetcher.set_robots_delay("a", 2.0)
    other.load_unread({"a"}, done=lambda: loaded.append("again"))
    assert loaded == ["a", "again"] and other.effective_delay("a") == 0.5  # read once: its transactions keep it
    other.success("a")
    assert other.effective_delay("a") == 2.0


def test_a_request_is_marked_seen_in_the_step_that_queues_it(frontier: FrontierStore) -> None:
    seen = ("set", frontier.key("seen", "7"), "-1234567890123")
    assert frontier.push("a", 0, "http://a/0\t{}", seen=seen)
    assert not frontier.push("a", 0, "http://a/0\t{}", seen=seen)
    assert frontier.sizes().queued == 1
    assert frontier.client.sismember(seen[1], seen[2])


def test_a_paced_domain_waits_until_its_request_has_left(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    one, two = _frontier(redis_client, crawl_name, clock), _frontier(redis_client, crawl_name, clock)
    for n in range(4):
        _push(one, f"http://a/{n}")
    held = one.pop()
    clock.now += 3.0  # still at hand in its worker, or in its engine: not yet on the wire
    assert two.pop().kind == "none"
    one.sent("a")  # it leaves now: the delay counts from here
    clock.now += 0.999
    assert two.pop().kind == "none"
    clock.now += 0.001
    assert _popped_url(two) == "http://a/1"
    one.finish("a", held.request.partition("\t")[0])
    second = one.pop()
    assert second.kind == "none"
    clock.now += 1.0
    dropped = one.pop()  # dropped before it left (robots.txt, a filter): its slot goes back
    one.unreserve("a", dropped.reservation)
    one.finish("a", dropped.request.partition("\t")[0])
    assert two.pop().kind == "request"


def test_a_request_that_keeps_coming_back_becomes_a_dead_letter(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    frontier = _frontier(redis_client, crawl_name, clock, max_deliveries=3)
    _push(frontier, "http://a/0")
    for delivery in range(3):
        assert _popped_url(frontier) == "http://a/0", delivery
        frontier.finish("a", "http://a/0")
        if delivery == 0:
            clock.now += 30.0  # its worker died: the lease expires
        else:
            frontier.release(["http://a/0"], "a")  # its callback failed
        clock.now += 1.0
    dead = frontier.pop()
    assert (dead.kind, dead.domain, dead.request) == ("dead", "a", "http://a/0\t{}")  # once, for a row
    assert frontier.pop().kind == "none"
    assert frontier.dead_letters() == ["http://a/0\t{}"]
    assert frontier.sizes().dead == 1 and frontier.sizes().empty


def test_requests_given_back_unstarted_or_acknowledged_do_not_count_towards_the_cap(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    frontier = _frontier(redis_client, crawl_name, clock, max_deliveries=2)
    _push(frontier, "http://a/0")
    for _ in range(3):
        assert _popped_url(frontier) == "http://a/0"
        frontier.finish("a", "http://a/0")
        frontier.release(["http://a/0"], "a", returned=False)  # popped ahead, never handed to the engine
        clock.now += 1.0
    assert _popped_url(frontier) == "http://a/0"
    frontier.release(["http://a/0"], "a")
    clock.now += 1.0
    assert _popped_url(frontier) == "http://a/0"  # delivered again: one return so far
    frontier.ack(["http://a/0"], "a")
    assert frontier.sizes().dead == 0


def test_a_lease_renewed_while_its_page_is_stored_never_expires(frontier: FrontierStore, clock: FakeClock) -> None:
    _push(frontier, "http://a/0")
    assert _popped_url(frontier) == "http://a/0"
    for _ in range(10):  # 10 lease times (30 s) of a database outage, renewed every 10 s
        clock.now += 10.0
        assert frontier.renew(["http://a/0", "http://a/never-leased"], "a") == Renewal(1, [])
        assert frontier.pop().kind == "none"
    assert frontier.sizes().reclaimed == 0


def test_a_pop_before_the_frontier_may_have_work_asks_the_engine_again_then() -> None:
    # The engine can be woken before then (a wake-up due sooner is the one kept): the pop it
    # makes, too early to ask Redis, must leave a wake-up for when it is time, or the engine
    # waits for its own heartbeat, 5 s.
    crawler = get_crawler(PageSpider, project_settings(REDIS_URL=REDIS_URL, CRAWLER_CRAWL_ID="wake-up"))
    spider = PageSpider.from_crawler(crawler)
    queue = RedisFrontierQueue(CrawlServices.of(crawler).redis.client, spider, "crawler:{wake-up}")  # type: ignore[union-attr]
    queue._pop_after = time.monotonic() + 1.0  # the frontier said: nothing before a second from now
    assert queue.pop() is None
    wake_up = queue.wakeup._call
    assert wake_up is not None and wake_up.active()
    from twisted.internet import reactor

    assert 0.9 < wake_up.getTime() - reactor.seconds() <= 1.0
    queue.wakeup.cancel()


def test_domain_loads_count_each_domain_s_slots_held_and_requests_queued_at_every_priority(
    frontier: FrontierStore,
) -> None:
    for url, priority in [("http://a/0", 0), ("http://a/1", 5), ("http://a/2", 5), ("http://b/0", -1)]:
        _push(frontier, url, priority)
    assert _popped_url(frontier) == "http://a/1"
    assert frontier.domain_loads(["a", "b", "unknown"]) == {"a": (1, 2), "b": (0, 1), "unknown": (0, 0)}


def test_a_request_a_process_keeps_is_tried_again_within_half_the_delay_after_another_took_the_slot(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    # A soft-404 probe stays in the process that made it; the other processes take the domain's
    # slots through the shared frontier without telling it when one comes free.
    policy = Policy(PolicyConfig(default_delay=0.5, handout_lead=0.0))
    mine = _frontier(redis_client, crawl_name, clock, default_delay=0.5, default_concurrency=1)
    other = _frontier(redis_client, crawl_name, clock, default_delay=0.5, default_concurrency=1)
    queue = PolitePriorityQueue(get_crawler(Spider), FifoMemoryQueue, "", limiter=RedisDomainLimiter(policy, mine))
    _push(other, "http://a/0")
    assert _popped_url(other) == "http://a/0"  # it left at once: the next slot is 0.5 s on
    RedisDomainLimiter(policy, other).finish("a", "http://a/0")  # and was answered
    queue.push(Request("http://a/probe"))
    assert queue.pop() is None  # the slot is the other process's
    clock.now += 0.5 + 0.25 + 0.01
    request = queue.pop()
    assert request is not None and request.url == "http://a/probe"


def test_a_request_not_sent_goes_back_to_the_front_of_its_queue_not_counted_as_a_delivery(crawl_name: str) -> None:
    crawler = get_crawler(
        PageSpider, project_settings(REDIS_URL=REDIS_URL, CRAWLER_CRAWL_ID=crawl_name, ROBOTSTXT_OBEY=False)
    )
    spider = PageSpider.from_crawler(crawler)
    queue = RedisFrontierQueue(CrawlServices.of(crawler).redis.client, spider, crawl_keys(crawl_name))  # type: ignore[union-attr]
    for n in range(2):
        queue.push(Request(f"http://a.test/{n}"))
    # The link not started, its operations run at once; the first pops ask the shards.
    request = next(filter(None, (queue.pop() for _ in range(5))), None)
    assert request is not None and request.url == "http://a.test/0"
    assert queue.store.sizes().leased == 1
    crawler.signals.send_catch_log(signal=request_not_sent, request=request)
    sizes = queue.store.sizes()
    assert (sizes.queued, sizes.leased) == (2, 0)
    assert queue.store.client.hget(f"{queue.store.shard_of('a.test')}:returns", "http://a.test/0") is None
    first = queue.store.client.lindex(queue.store.domain_part("a.test", "q", "a.test", "0"), 0)
    assert first.startswith(b"http://a.test/0\t")  # at the front again


class _LateLink(RedisLink):
    """A link whose answers come when the test says, later than the call, as the I/O thread's do."""

    def __init__(self, client: redis.Redis):
        super().__init__(client)
        self.held: list[Op] = []

    def submit(self, op: Op) -> None:
        self.held.append(op)

    def answer_all(self) -> None:
        self.answer(len(self.held))

    def answer(self, count: int) -> None:
        """The first ``count`` operations held, in order."""
        answered, self.held = self.held[:count], self.held[count:]
        for op in answered:
            super().submit(op)  # not started: answered at once


def _late_limiter(
    client: redis.Redis, name: str, clock: FakeClock, concurrency: int = 2
) -> tuple[RedisDomainLimiter, FrontierStore, _LateLink]:
    """A process's limiter at a 1 s delay whose frontier answers when the test says."""
    store = _frontier(client, name, clock, default_concurrency=concurrency)
    link = _LateLink(client)
    policy = Policy(PolicyConfig(default_delay=1.0, base_concurrency=concurrency, handout_lead=0.0))
    return RedisDomainLimiter(policy, store, link), store, link


def test_an_answer_of_redis_sent_before_a_block_does_not_lift_it_from_the_process_s_copy(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    # Seen in a crawl: a success's transaction came back after a 429 had blocked the domain
    # here, and its state, which knew no block, let a request leave until the block's came back.
    limiter, _, link = _late_limiter(redis_client, crawl_name, clock)
    limiter.success("a")
    limiter.sent("a")
    limiter.blocked("a", retry_after=7)
    departure = limiter.departure_at("a")
    assert departure >= clock.now + 7
    link.answer(1)  # the success's: Redis has seen neither the departure nor the block yet
    assert limiter.departure_at("a") == departure
    link.answer(1)  # the departure's
    assert limiter.departure_at("a") == departure
    link.answer_all()  # the block's: the copy is Redis's again, and it knows all three
    _assert_blocked_until(limiter, "a", clock.now + 7)


def test_an_answer_older_than_the_process_s_latest_change_still_brings_another_s_block(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    # A domain this process keeps changing gets answers that each know all but its latest
    # change: another process's block must reach its copy all the same.
    limiter, _, link = _late_limiter(redis_client, crawl_name, clock)
    other, _, other_link = _late_limiter(redis_client, crawl_name, clock)
    limiter.set_robots_delay("a", 2.0)
    other.blocked("a", retry_after=30)
    other_link.answer_all()  # in Redis now
    limiter.sent("a")  # the latest change: no answer held knows it
    link.answer(1)  # the robots.txt delay's, run now on a state that has the other's block
    _assert_blocked_until(limiter, "a", clock.now + 30)


def _assert_blocked_until(limiter: RedisDomainLimiter, domain: str, until: float) -> None:
    """The process's copy of the domain is blocked until then, and nothing leaves before."""
    assert limiter.state(domain).blocked_until == pytest.approx(until)
    assert limiter.departure_at(domain) >= until


def test_a_slot_granted_and_not_taken_in_time_is_given_back_rather_than_used_late(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    # Seen in the soak: a process's soft-404 probe asked for a slot of a site that was down; the
    # grant came as the site's circuit opened, so the probe stopped asking, and minutes later,
    # the circuit closed, it left on that grant 21 ms after another process's request.
    keeper, _, link = _late_limiter(redis_client, crawl_name, clock)
    other_store = _frontier(redis_client, crawl_name, clock)
    other = RedisDomainLimiter(keeper.policy, other_store)
    assert keeper.try_start("a", "probe:1") is None  # asked
    link.answer_all()  # granted; its taker waits for something else meanwhile
    clock.now += GRANT_FRESH_SECONDS + 5.0  # the frontier's hold of that slot ended
    assert other.try_start("a", "http://a/0") is not None
    other_store.sent("a")  # the other process's request left now
    assert keeper.try_start("a", "probe:2") is None  # not the old grant: asked again
    link.answer_all()
    assert keeper.try_start("a", "probe:2") is None  # the other's request left less than the delay ago
    clock.now += 1.0
    link.answer_all()  # asked again then, answered now: the delay has passed
    assert keeper.try_start("a", "probe:2") is not None
    # The old grant's hold of the domain's concurrency went with it.
    assert redis_client.zrange(f"{other_store.shard_of('a')}:inflight:a", 0, -1) == [b"http://a/0", b"probe:2"]


def test_a_slot_granted_is_taken_while_fresh_by_a_taker_that_one_request_in_flight_would_stop(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    keeper, _, link = _late_limiter(redis_client, crawl_name, clock, concurrency=1)
    assert keeper.try_start("a", "probe") is None
    link.answer_all()
    clock.now += GRANT_FRESH_SECONDS - 0.1
    assert keeper.can_start("a")  # the grant counts in flight, and is the slot to take
    assert keeper.try_start("a", "probe") is not None
    assert keeper.state("a").inflight == 1


def test_a_slot_given_back_is_the_domain_s_again_and_its_share_with_it(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    keeper, store, link = _late_limiter(redis_client, crawl_name, clock)
    inflight = f"{store.shard_of('a')}:inflight:a"
    assert keeper.try_start("a", "probe:1") is None
    link.answer_all()
    clock.now += GRANT_FRESH_SECONDS
    keeper.can_start("a")  # not taken in time: given back
    assert keeper.state("a").inflight == 0
    link.answer_all()  # the give-back reaches the frontier
    assert redis_client.zrange(inflight, 0, -1) == []
    assert store.try_reserve("a", "now") is not None  # nothing left since: the slot is free again


def test_a_fresh_slot_given_back_leaves_its_request_s_share(
    redis_client: redis.Redis, crawl_name: str, clock: FakeClock
) -> None:
    keeper, store, link = _late_limiter(redis_client, crawl_name, clock)
    _push(store, "http://a/0")
    key = store.pop().request.partition("\t")[0]  # handed out: its lease key holds a share of the concurrency
    clock.now += 20.0  # stopped past its slot
    assert keeper.try_start("a", key, stale=True) is None
    link.answer_all()  # a fresh slot, while its request waits for something else
    clock.now += GRANT_FRESH_SECONDS
    keeper.can_start("a")  # given back
    link.answer_all()
    assert redis_client.zrange(f"{store.shard_of('a')}:inflight:a", 0, -1) == [key.encode()]


def _worker_past_its_lease(crawl_name: str) -> tuple[Crawler, RedisFrontierQueue, Request]:
    """A worker's queue that popped http://a.test/0, then stood still past its lease while
    another process was handed the request."""
    settings = project_settings(
        REDIS_URL=REDIS_URL,
        CRAWLER_CRAWL_ID=crawl_name,
        ROBOTSTXT_OBEY=False,
        CRAWLER_LEASE_SECONDS=0.5,
        CRAWLER_DEFAULT_DELAY=0.0,
        CRAWLER_MIN_DELAY=0.0,
    )
    crawler = get_crawler(PageSpider, settings)
    spider = PageSpider.from_crawler(crawler)
    queue = RedisFrontierQueue(CrawlServices.of(crawler).redis.client, spider, crawl_keys(crawl_name))  # type: ignore[union-attr]
    queue.push(Request("http://a.test/0"))
    request = next(filter(None, (queue.pop() for _ in range(5))), None)  # the link not started: at once
    assert request is not None and "http://a.test/0" in queue.leased
    time.sleep(0.6)  # this process stands still past its lease; another takes the request
    other = FrontierStore(queue.store.client, crawl_keys(crawl_name), queue.store.config)
    assert [entry.kind for entry in other.pop_many(1, shard=other.shard_of("a.test")).popped] == ["request"]
    return crawler, queue, request


def test_a_stale_request_whose_lease_went_to_another_process_is_not_sent_and_leaves_its_slot_alone(
    crawl_name: str,
) -> None:
    crawler, queue, request = _worker_past_its_lease(crawl_name)
    inflight = f"{queue.store.shard_of('a.test')}:inflight:a.test"
    assert queue.store.client.zrange(inflight, 0, -1) == [b"http://a.test/0"]
    request.meta[LEAVE_AT] -= 60  # it waited long enough for its slot to be stale
    limiter_middleware = LimiterMiddleware.from_crawler(crawler)
    with pytest.raises(NotSent, match="another process has it"):
        asyncio.run(HeldSlotCheck(crawler).keep_or_renew("a.test", request))
    limiter_middleware.process_exception(request, NotSent("not sent"))
    assert queue.store.client.zrange(inflight, 0, -1) == [b"http://a.test/0"]  # the other's share
    crawler.signals.send_catch_log(signal=request_not_sent, request=request)
    sizes = queue.store.sizes()
    assert (sizes.queued, sizes.leased) == (0, 1)  # the other's lease: not given back
    assert crawler.stats.get_value("frontier/lease_lost_before_sent") == 1


@pytest.mark.parametrize("renewed_first", [False, True])
def test_a_worker_back_from_a_stop_leaves_the_retry_of_a_lease_another_process_has_to_that_one(
    crawl_name: str, renewed_first: bool
) -> None:
    crawler, queue, request = _worker_past_its_lease(crawl_name)
    if renewed_first:  # its renewal, overdue, may learn first that the lease went to the other
        queue._renew()
        assert "http://a.test/0" in queue.lost_leases
    queue.push(request.replace(dont_filter=True))  # the retry of an answer from before the stop
    assert "http://a.test/0" not in queue.leased  # not renewed, acknowledged or given back
    sizes = queue.store.sizes()
    assert (sizes.queued, sizes.leased) == (0, 1)  # the other's lease, not a second copy queued
    assert crawler.stats.get_value("frontier/lease_lost_before_pushed") == 1

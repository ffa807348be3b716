"""The frontier of a crawl in one process, with a fake clock, on what only it has: the order of
ready domains, its indexes (how much a pop looks at), the engine's wake-up, robots.txt arrivals and
the eviction of idle domains. The rules both frontiers share are ``test_frontier_contract``'s."""

from __future__ import annotations

from scrapy import Request, Spider
from scrapy.squeues import FifoMemoryQueue
from scrapy.utils.test import get_crawler

from crawler.frontier.meta import NOT_BEFORE
from crawler.frontier.queue_local import PolitePriorityQueue
from crawler.politeness.limiter_local import DomainLimiter
from crawler.politeness.policy import Policy, PolicyConfig
from crawler.politeness.slots import DOMAIN, RESERVATION
from tests.helpers import FakeClock


class CountingLimiter(DomainLimiter):
    """Counts how many domains the queue asks about."""

    consulted = 0

    def can_start(self, domain: str, now: float | None = None) -> bool:
        self.consulted += 1
        return super().can_start(domain, now)


def _queue(clock: FakeClock, **config) -> tuple[PolitePriorityQueue, CountingLimiter]:
    limiter = CountingLimiter(Policy(PolicyConfig(**{"default_delay": 1.0, **config})), clock)
    crawler = get_crawler(Spider)
    return PolitePriorityQueue(crawler, FifoMemoryQueue, "", limiter=limiter), limiter


def _urls(queue: PolitePriorityQueue) -> list[str | None]:
    """Pop until nothing is ready, each request sent at once."""
    urls = []
    while (request := queue.pop()) is not None:
        queue.limiter.sent(request.meta[DOMAIN])
        urls.append(request.url)
    return urls


def test_ready_domains_by_priority_then_the_one_served_longest_ago(clock: FakeClock) -> None:
    queue, _ = _queue(clock)
    for url, priority in [("http://a.example/1", 0), ("http://b.example/1", 5), ("http://c.example/1", 0)]:
        queue.push(Request(url, priority=priority))
    assert _urls(queue) == ["http://b.example/1", "http://a.example/1", "http://c.example/1"]
    queue.push(Request("http://c.example/2"))
    queue.push(Request("http://a.example/2"))
    assert _urls(queue) == []  # both wait for their delay
    clock.now += 1.0
    assert _urls(queue) == ["http://a.example/2", "http://c.example/2"]  # a was served before c


def test_a_higher_priority_request_moves_its_domain_ahead(clock: FakeClock) -> None:
    queue, _ = _queue(clock)
    queue.push(Request("http://a.example/low"))
    queue.push(Request("http://b.example/low"))
    queue.push(Request("http://b.example/high", priority=10))
    assert _urls(queue) == ["http://b.example/high", "http://a.example/low"]


def test_a_handed_out_request_holds_its_domains_slot(clock: FakeClock) -> None:
    queue, limiter = _queue(clock)
    queue.push(Request("http://a.example/1"))
    request = queue.pop()
    assert request is not None and request.meta[DOMAIN] == "a.example"
    assert request.meta[RESERVATION] == clock.now + 1.0
    clock.now += 0.25
    limiter.sent("a.example")  # the delay counts from when it leaves
    assert limiter.ready_at("a.example") == clock.now + 1.0


def test_a_domain_waits_for_its_request_to_leave_and_is_woken_when_it_does(clock: FakeClock) -> None:
    queue, limiter = _queue(clock)
    queue.push(Request("http://a.example/1"))
    queue.push(Request("http://a.example/2"))
    assert queue.pop() is not None
    clock.now += 5.0  # held up before the network for longer than the delay
    assert queue.pop() is None
    limiter.sent("a.example")
    assert queue.pop() is None
    assert queue._wakeup._call is not None  # the engine is asked again when the delay is over
    clock.now += 1.0
    assert _urls(queue) == ["http://a.example/2"]


def test_retries_wait_for_their_not_before(clock: FakeClock) -> None:
    queue, _ = _queue(clock)
    queue.push(Request("http://a.example/retry", meta={NOT_BEFORE: clock.now + 5}))
    assert _urls(queue) == [] and len(queue) == 1
    clock.now += 5
    assert _urls(queue) == ["http://a.example/retry"] and len(queue) == 0


def test_length_counts_queued_and_waiting_requests(clock: FakeClock) -> None:
    queue, _ = _queue(clock)
    for n in range(5):
        queue.push(Request(f"http://a.example/{n}"))
    queue.push(Request("http://b.example/retry", meta={NOT_BEFORE: clock.now + 60}))
    assert len(queue) == 6
    assert queue.pop() is not None and len(queue) == 5
    drained = list(queue.drain())
    assert len(drained) == 5 and len(queue) == 0 and queue.pop() is None


def test_a_pop_looks_only_at_domains_whose_time_has_come(clock: FakeClock) -> None:
    queue, limiter = _queue(clock)
    domains = 10_000
    for n in range(domains):
        queue.push(Request(f"http://site{n}.example/1"))
        queue.push(Request(f"http://site{n}.example/2"))
    assert len(_urls(queue)) == domains
    limiter.consulted = 0
    assert queue.pop() is None and limiter.consulted == 0  # every domain waits for its delay
    clock.now += 0.5
    assert queue.pop() is None and limiter.consulted == 0
    clock.now += 0.5
    assert len(_urls(queue)) == domains
    assert limiter.consulted == 2 * domains  # per request handed out, one domain checked twice (ready? reserve)
    assert len(queue) == 0


class FetchedRobots:
    """The robots.txt service as the queue sees it: a fetch runs until ``arrive``, which tells
    the limiter as the service does (the fetch's slot finished, the rules' delay set)."""

    def __init__(self, limiter: DomainLimiter, max_fetches: int = 10_000):
        self.limiter = limiter
        self.max_fetches = max_fetches
        self.fetched: list[str] = []
        self.arrived: set[str] = set()

    def ready(self, domain: str) -> bool:
        return domain in self.arrived

    def fetching(self, domain: str) -> bool:
        return domain in self.fetched and domain not in self.arrived

    def room(self) -> int:
        return max(0, self.max_fetches - (len(self.fetched) - len(self.arrived)))

    def claimed(self, domain: str, scheme: str, reservation: float) -> bool:
        self.fetched.append(domain)
        return True

    def arrive(self, domain: str) -> None:
        self.arrived.add(domain)
        self.limiter.finish(domain)
        self.limiter.set_robots_delay(domain, None)


def test_a_domain_fetching_its_robots_txt_is_not_looked_at_until_the_rules_arrive(clock: FakeClock) -> None:
    queue, limiter = _queue(clock)
    robots = FetchedRobots(limiter)
    queue.robots = robots
    domains = [f"site{n}.example" for n in range(1_000)]
    for domain in domains:
        queue.push(Request(f"http://{domain}/1"))
    assert queue.pop() is None and robots.fetched == domains
    for domain in domains:
        limiter.sent(domain)  # each robots.txt request left: the domain's next slot is a delay away
    limiter.consulted = 0
    for _ in range(60):
        clock.now += 1.0
        assert queue.pop() is None
    assert limiter.consulted == len(domains)  # once each, when its slot came, and not every second since
    sent = clock.now
    for domain in domains:
        robots.arrive(domain)
    assert _urls(queue) == []  # a delay after the robots.txt request, counted from its answer
    clock.now += 1.0
    assert len(_urls(queue)) == len(domains) and limiter.ready_at(domains[0]) == sent + 2.0


def test_robots_txt_fetches_wait_for_room_and_start_in_the_order_their_domains_came(clock: FakeClock) -> None:
    queue, limiter = _queue(clock)
    robots = FetchedRobots(limiter, max_fetches=8)
    queue.robots = robots
    domains = [f"site{n}.example" for n in range(1_000)]
    for domain in domains:
        queue.push(Request(f"http://{domain}/1"))
    assert queue.pop() is None and robots.fetched == domains[:8]
    limiter.consulted = 0
    assert queue.pop() is None and robots.fetched == domains[:8]
    assert limiter.consulted == 0  # the deferred are on no index: a pop does not look at them
    for domain in domains[:3]:
        limiter.sent(domain)
        robots.arrive(domain)
    assert queue.pop() is None and robots.fetched == domains[:11]  # three ended, three began
    assert limiter.consulted == 6  # the three whose rules arrived, and the three brought back
    urls = []
    while len(robots.arrived) < len(domains):
        for domain in robots.fetched:
            if domain not in robots.arrived:
                limiter.sent(domain)
                robots.arrive(domain)
        clock.now += 1.0  # a delay after each robots.txt: the pages of the domains whose rules came
        urls += _urls(queue)
        assert len(robots.fetched) - len(robots.arrived) <= 8
    assert robots.fetched == domains
    assert sorted(urls) == sorted(f"http://{domain}/1" for domain in domains)


def test_a_deferred_robots_txt_of_a_higher_priority_starts_first(clock: FakeClock) -> None:
    queue, limiter = _queue(clock)
    robots = FetchedRobots(limiter, max_fetches=2)
    queue.robots = robots
    for n in range(50):
        queue.push(Request(f"http://site{n}.example/1"))
    assert queue.pop() is None and robots.fetched == ["site0.example", "site1.example"]
    queue.push(Request("http://urgent.example/1", priority=100))
    queue.push(Request("http://site9.example/2", priority=50))  # already in line: moves ahead
    assert queue.pop() is None
    for domain in robots.fetched:
        limiter.sent(domain)
        robots.arrive(domain)
    assert queue.pop() is None and robots.fetched[2:] == ["urgent.example", "site9.example"]


def test_the_queue_evicts_the_state_of_idle_domains_with_nothing_queued(clock: FakeClock) -> None:
    limiter = DomainLimiter(Policy(PolicyConfig(default_delay=1.0)), clock)
    crawler = get_crawler(Spider, {"CRAWLER_DOMAIN_IDLE_SECONDS": 600.0})
    queue = PolitePriorityQueue(crawler, FifoMemoryQueue, "", limiter=limiter)
    queue.push(Request("http://gone.example/1"))
    queue.push(Request("http://stays.example/1"))
    queue.push(Request("http://stays.example/2"))
    assert len(_urls(queue)) == 2
    limiter.finish("gone.example")
    clock.now += 601.0
    assert _urls(queue) == ["http://stays.example/2"]  # the pop that found it also swept
    assert set(limiter.states) == {"stays.example"} and set(queue._served) == {"stays.example"}

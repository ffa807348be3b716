"""The departure gate holds a request that has its slot but has not left while its domain is
paused or blocked: a pause or a 429's block may come after the slot was taken (a request handed
out ahead, or waiting for its domain's delay), and nothing more may be sent to the domain."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from crawler.download.gate import DepartureGate
from crawler.exceptions import NotSent
from crawler.items import PageItem
from crawler.politeness.overrides import DomainControl
from crawler.politeness.slots import DOMAIN, LEAVE_AT
from crawler.spiders.links import LinksSpider
from tests.conftest import REDIS_URL
from tests.helpers import project_settings


def _crawler_running(**settings: str) -> Crawler:
    crawler = get_crawler(Spider, project_settings(REDIS_URL="", **settings))
    crawler.engine = SimpleNamespace(_slot=SimpleNamespace(closing=None))  # what the gate reads of Scrapy's engine
    return crawler


class PausedDomain:
    """A gate with a paused domain and a request of it that has its slot, and what was sent."""

    def __init__(self) -> None:
        self.crawler = _crawler_running()
        self.gate = DepartureGate(self.crawler)
        self.state = self.gate.limiter.state("example.com")
        DomainControl(paused=True).apply(self.state)
        self.request = Request("http://example.com/", meta={DOMAIN: "example.com"})
        self.sent: list[Request] = []

    def leave(self) -> asyncio.Future[Response]:
        return asyncio.ensure_future(self.gate.download(self.request, self._send))

    async def _send(self, request: Request) -> Response:
        self.sent.append(request)
        return Response(request.url, request=request)


def test_a_request_with_its_slot_waits_while_its_domain_is_paused_and_leaves_once_resumed() -> None:
    paused = PausedDomain()

    async def scenario() -> None:
        leaving = paused.leave()
        await asyncio.sleep(1.0)
        assert paused.sent == [] and not leaving.done()
        DomainControl().apply(paused.state)  # resumed
        response = await asyncio.wait_for(leaving, 5)
        assert paused.sent == [paused.request] and response.request is paused.request

    asyncio.run(scenario())
    assert paused.crawler.stats.get_value("limiter/held_for_pause_count") == 1


def test_a_request_held_for_a_pause_is_not_sent_when_the_job_ends_meanwhile() -> None:
    paused = PausedDomain()

    async def scenario() -> None:
        leaving = paused.leave()
        await asyncio.sleep(0.5)
        paused.crawler.engine._slot.closing = Deferred()  # Scrapy's engine closing: it waits for every download
        with pytest.raises(NotSent, match="ended while an operator had its domain paused"):
            await asyncio.wait_for(leaving, 5)

    asyncio.run(scenario())
    assert paused.sent == []


def test_a_request_waiting_for_its_departure_time_waits_out_a_block_that_came_meanwhile() -> None:
    # It had its slot when a 429 of another request of its domain was read: it leaves only once
    # the block is over, not at the time its slot gave it.
    crawler = _crawler_running(CRAWLER_DEFAULT_DELAY="0.2")
    gate = DepartureGate(crawler)
    limiter = gate.limiter
    limiter.sent("example.com")  # the domain's previous request: the next may leave 0.2 s later
    request = Request("http://example.com/", meta={DOMAIN: "example.com"})
    left: list[float] = []

    async def send(request: Request) -> Response:
        left.append(limiter.clock())
        return Response(request.url, request=request)

    async def scenario() -> float:
        leaving = asyncio.ensure_future(gate.download(request, send))
        await asyncio.sleep(0)  # one turn: the request waits for its departure time now
        limiter.blocked("example.com", retry_after=0.5)
        blocked_until = limiter.state("example.com").blocked_until
        await asyncio.wait_for(leaving, 5)
        return blocked_until

    blocked_until = asyncio.run(scenario())
    assert len(left) == 1 and left[0] >= blocked_until
    assert crawler.stats.get_value("limiter/held_for_block_count") == 1


def test_a_request_held_for_a_block_that_grows_while_it_waits_is_counted_once() -> None:
    crawler = _crawler_running(CRAWLER_DEFAULT_DELAY="0")
    gate = DepartureGate(crawler)
    limiter = gate.limiter
    limiter.blocked("example.com", retry_after=0.2)
    request = Request("http://example.com/", meta={DOMAIN: "example.com"})

    async def send(request: Request) -> Response:
        return Response(request.url, request=request)

    async def scenario() -> None:
        leaving = asyncio.ensure_future(gate.download(request, send))
        await asyncio.sleep(0.1)
        limiter.blocked("example.com", retry_after=0.3)  # another 429 meanwhile: held longer
        await asyncio.wait_for(leaving, 5)

    asyncio.run(scenario())
    assert limiter.clock() >= limiter.state("example.com").blocked_until
    assert crawler.stats.get_value("limiter/held_for_block_count") == 1


def test_past_the_gate_a_request_may_still_leave_only_if_nothing_held_its_domain_since() -> None:
    # Asked again once a new connection can carry the request (crawler.download.departures).
    gate = DepartureGate(_crawler_running(CRAWLER_DEFAULT_DELAY="0.2"))
    limiter = gate.limiter
    request = Request("http://example.com/", meta={DOMAIN: "example.com"})
    assert gate.may_leave(request)
    limiter.sent("example.com")  # another request of the domain left meanwhile
    assert not gate.may_leave(request)
    assert gate.may_leave(request, again=True)  # written before: that write was its departure
    limiter.blocked("example.com", retry_after=1)
    assert not gate.may_leave(request, again=True)
    paused = Request("http://paused.example/", meta={DOMAIN: "paused.example"})
    DomainControl(paused=True).apply(limiter.state("paused.example"))
    assert not gate.may_leave(paused) and not gate.may_leave(paused, again=True)
    assert gate.may_leave(Request("http://example.com/robots.txt"))  # outside the limiter's pacing


def _not_sent_outputs(meta: dict[str, object], **settings: str) -> list[object]:
    """What the links spider makes of a request the gate did not send as its job ended."""
    crawler = get_crawler(LinksSpider, project_settings(**settings))
    spider = LinksSpider.from_crawler(crawler, url="http://example.com/", job_id="test-job")
    failure = Failure(NotSent("not fetched: the job ended while an operator had its domain paused"))
    failure.request = Request("http://example.com/page", meta={DOMAIN: "example.com", **meta})  # type: ignore[attr-defined]

    async def outputs() -> list[object]:
        return [output async for output in spider.page_failed(failure)]

    return asyncio.run(outputs())


def _skipped(outputs: list[object]) -> bool:
    return len(outputs) == 1 and isinstance(item := outputs[0], PageItem) and item.status == "skipped"


def test_a_request_not_sent_is_skipped_unless_the_shared_frontier_handed_it_out() -> None:
    shared = {"REDIS_URL": REDIS_URL, "CRAWLER_CRAWL_ID": "test-not-sent"}
    assert _skipped(_not_sent_outputs({}, REDIS_URL=""))  # a crawl of its own
    assert _skipped(_not_sent_outputs({}, **shared))  # a request the process kept (a probe)
    # Handed out by the shared frontier: it goes back there for another process, with no row.
    assert _not_sent_outputs({LEAVE_AT: 1_000.0}, **shared) == []

"""The departure gate holds a request that has its slot but has not left while its domain is
paused: a pause may come after the slot was taken (a request handed out ahead, or held for a
429's block), and nothing more may be sent to a paused domain."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred

from crawler.download.gate import DepartureGate
from crawler.exceptions import NotSent
from crawler.politeness.overrides import DomainControl
from crawler.politeness.slots import DOMAIN
from tests.helpers import project_settings


def _crawler_running() -> Crawler:
    crawler = get_crawler(Spider, project_settings(REDIS_URL=""))
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

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


def test_a_request_with_its_slot_waits_while_its_domain_is_paused_and_leaves_once_resumed() -> None:
    crawler = _crawler_running()
    gate = DepartureGate(crawler)
    domain = "example.com"
    state = gate.limiter.state(domain)
    DomainControl(paused=True).apply(state)
    request = Request("http://example.com/", meta={DOMAIN: domain})
    sent: list[Request] = []

    async def send(request: Request) -> Response:
        sent.append(request)
        return Response(request.url, request=request)

    async def scenario() -> None:
        leaving = asyncio.ensure_future(gate.download(request, send))
        await asyncio.sleep(1.0)
        assert sent == [] and not leaving.done()
        DomainControl().apply(state)  # resumed
        response = await asyncio.wait_for(leaving, 5)
        assert sent == [request] and response.request is request

    asyncio.run(scenario())
    assert crawler.stats.get_value("limiter/held_for_pause_count") == 1


def test_a_request_held_for_a_pause_is_not_sent_when_the_job_ends_meanwhile() -> None:
    crawler = _crawler_running()
    gate = DepartureGate(crawler)
    DomainControl(paused=True).apply(gate.limiter.state("example.com"))
    request = Request("http://example.com/", meta={DOMAIN: "example.com"})
    sent: list[Request] = []

    async def send(request: Request) -> Response:
        sent.append(request)
        return Response(request.url, request=request)

    async def scenario() -> None:
        leaving = asyncio.ensure_future(gate.download(request, send))
        await asyncio.sleep(0.5)
        crawler.engine._slot.closing = Deferred()  # Scrapy's engine closing: it waits for every download

        with pytest.raises(NotSent, match="ended while an operator had its domain paused"):
            await asyncio.wait_for(leaving, 5)

    asyncio.run(scenario())
    assert sent == []

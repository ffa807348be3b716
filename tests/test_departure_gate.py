"""The departure gate holds a request that has its slot but has not left while its domain is
paused: a pause may come after the slot was taken (a request handed out ahead, or held for a
429's block), and nothing more may be sent to a paused domain."""

from __future__ import annotations

import asyncio

from scrapy import Request, Spider
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from crawler.download.gate import DepartureGate
from crawler.politeness.overrides import DomainControl
from crawler.politeness.slots import DOMAIN
from tests.helpers import project_settings


def test_a_request_with_its_slot_waits_while_its_domain_is_paused_and_leaves_once_resumed() -> None:
    crawler = get_crawler(Spider, project_settings(REDIS_URL=""))
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

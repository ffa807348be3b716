"""What every download handler of the crawl does around Scrapy's own, whatever the protocol:

- a request is held until its domain's delay has passed since the last one left (plus
  ``CRAWLER_SPACING_MARGIN`` of it), or until the time the shared frontier gave it
  (``CRAWLER_HANDOUT_LEAD_SECONDS``: the frontier hands it out ahead of its slot), and until a
  block (a 429) ends: it may have been waiting in Scrapy's downloader or a middleware when the
  answer that blocked the domain arrived; and while an operator has the domain paused, which
  may have come after its slot was taken; the HTTP/1.1 handler asks again (``may_leave``) once
  a new connection can carry the request and hands it back (``HeldBeforeSending``) if not;
- a shared request held past half its lease leaves only with a live slot (``held_slot.py``);
- a connection the guarded resolver refused is reported as ``BlockedByPolicy`` with its reason,
  not as a failed lookup to retry.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import CannotResolveHostError
from scrapy.http import Response
from scrapy.utils.httpobj import urlparse_cached

from crawler.compat import engine_closing
from crawler.download.departures import HeldBeforeSending
from crawler.download.held_slot import HeldSlotCheck
from crawler.exceptions import NotSent
from crawler.guard.blocked import refuse
from crawler.guard.resolver import installed_resolver
from crawler.politeness.slots import DOMAIN, LEAVE_AT
from crawler.services import CrawlServices
from crawler.signals import request_not_sent

PAUSE_RECHECK_SECONDS = 0.25
"""How often a request held for a paused domain looks whether it was resumed."""


class DepartureGate:
    def __init__(self, crawler: Crawler):
        self.crawler = crawler
        self.services = CrawlServices.of(crawler)
        self.limiter = self.services.limiter
        self.held_slot = HeldSlotCheck(crawler)
        self.spacing_margin = crawler.settings.getfloat("CRAWLER_SPACING_MARGIN")

    async def download(self, request: Request, send: Callable[[Request], Awaitable[Response]]) -> Response:
        """``send(request)`` once the request may leave, with the guard's refusals said as such."""
        domain = request.meta.get(DOMAIN)
        while True:
            if domain is not None:
                try:
                    await self._departure_time_came(domain, request.meta.get(LEAVE_AT, 0.0))
                    await self.held_slot.keep_or_renew(domain, request)
                except NotSent:
                    self.crawler.signals.send_catch_log(signal=request_not_sent, request=request)
                    raise
            try:
                return await self._send(request, send)
            except HeldBeforeSending:
                self.crawler.stats.inc_value("limiter/held_before_sending_count")

    def may_leave(self, request: Request, again: bool = False) -> bool:
        """Whether ``request``, past the gate, may still leave now: what the gate waited for
        still holds (no pause, no block, no later departure time since). Sent ``again`` on a new
        connection after a kept-alive one turned out closed, its first write was its departure
        (the domain's next counts from it): only a pause or a block holds it."""
        domain = request.meta.get(DOMAIN)
        if domain is None:
            return True
        limiter = self.limiter
        state, now = limiter.state(domain), limiter.clock()
        if state.paused:
            return False
        if again:
            return state.blocked_until <= now
        return self._departure_at(domain, request.meta.get(LEAVE_AT, 0.0)) <= now

    async def _send(self, request: Request, send: Callable[[Request], Awaitable[Response]]) -> Response:
        try:
            return await send(request)
        except CannotResolveHostError:
            resolver = installed_resolver()
            refusal = resolver.refusals.get(urlparse_cached(request).hostname or "") if resolver is not None else None
            if refusal is None:
                raise
            guard = self.services.guard
            if guard is not None and guard.seeded(request):  # a seed of another process
                return await send(request)
            raise refuse(self.crawler.stats, request, refusal) from None

    async def _departure_time_came(self, domain: str, leave_at: float) -> None:
        # Asked again after every wait: a block or a longer delay may have come meanwhile.
        limiter = self.limiter
        held_for_pause = held_for_block = False
        while True:
            state = limiter.state(domain)
            if state.paused:
                if engine_closing(self.crawler):  # it would wait for ever: the job ends without it
                    raise NotSent("not fetched: the job ended while an operator had its domain paused")
                if not held_for_pause:
                    held_for_pause = True
                    self.crawler.stats.inc_value("limiter/held_for_pause_count")
                await asyncio.sleep(PAUSE_RECHECK_SECONDS)
                continue
            if (wait := self._departure_at(domain, leave_at) - (now := limiter.clock())) <= 0:
                return
            if state.blocked_until > now and not held_for_block:  # once, however often the block grows
                held_for_block = True
                self.crawler.stats.inc_value("limiter/held_for_block_count")
            await asyncio.sleep(wait)

    def _departure_at(self, domain: str, leave_at: float) -> float:
        """When the domain's request may leave, ``CRAWLER_SPACING_MARGIN`` of its delay later
        than the delay allows: a site that reads one request late (its server busy) by up to
        that much still sees the whole delay before the next one."""
        at = max(leave_at, self.limiter.departure_at(domain))
        return at + self.spacing_margin * self.limiter.effective_delay(domain) if at else at

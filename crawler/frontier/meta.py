"""What the frontier and the middlewares share: request meta keys, the domain of a request,
and how to make the engine ask the frontier again."""

from __future__ import annotations

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.utils.httpobj import urlparse_cached

NOT_BEFORE = "not_before"
"""Unix time before which the frontier does not hand the request out (retries with backoff)."""
DOMAIN = "limiter_domain"
"""Set on a request handed out: the domain whose slot it holds until it finishes."""
RESERVATION = "limiter_reservation"
"""The slot reserved for the request, given back if it is dropped before it is sent."""
SENT_AT = "limiter_sent_at"
"""Unix time the request's bytes were sent on the socket (``crawler.downloader.handler``)."""
HOLDER = "limiter_holder"
"""Who holds one of the domain's concurrent slots: the request's lease key, or ``robots_holder``."""


def robots_holder(domain: str) -> str:
    return f"robots:{domain}"  # frontier.lua names its robots.txt claims the same way


def domain_key(request: Request) -> str:
    """The unit of politeness: host and port, as robots.txt is scoped."""
    return urlparse_cached(request).netloc.rpartition("@")[2].lower()


def wake_engine(crawler: Crawler) -> None:
    """Have the engine ask the scheduler for requests now (its own scheduling call)."""
    engine = crawler.engine
    if engine is not None and engine._slot is not None:
        engine._slot.nextcall.schedule()

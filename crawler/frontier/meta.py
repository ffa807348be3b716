"""What the frontier and the middlewares share: request meta keys and the domain of a request."""

from __future__ import annotations

from scrapy import Request
from scrapy.utils.httpobj import urlparse_cached

from crawler.identity import netloc_key

NOT_BEFORE = "not_before"
"""Unix time before which the frontier does not hand the request out (retries with backoff)."""
DOMAIN = "limiter_domain"
"""Set on a request handed out: the domain whose slot it holds until it finishes."""
RESERVATION = "limiter_reservation"
"""The slot reserved for the request, given back if it is dropped before it is sent."""
HOLDER = "limiter_holder"
"""Who holds one of the domain's concurrent slots: the request's lease key, or ``robots_holder``."""

LEAVE_AT = "limiter_leave_at"
"""Unix time before which a request handed out ahead of its slot by the shared frontier may not
leave (the download handler holds it until then)."""

SENT_AT = "request_sent_at"
"""Unix time at which the request left for the network: when its bytes were sent on the socket
(``crawler.download.handler``), else when it passed the downloader middlewares; the start of
its ``request_log`` row."""
DELAY_IN_FORCE = "delay_in_force"
"""The domain's delay when the request left: the least time before the domain's next start.
Set with the limiter's ``sent``: by the handler's stamp, or on return for a request whose
departure went unnoticed."""


def robots_holder(domain: str) -> str:
    return f"robots:{domain}"  # frontier.lua names its robots.txt claims the same way


def domain_key(request: Request) -> str:
    """The unit of politeness: host and port, as robots.txt is scoped."""
    return netloc_key(urlparse_cached(request).netloc)

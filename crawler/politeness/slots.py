"""What a request carries of its domain's slot, read and written by the frontier, the download
handler and the middlewares; and the domain of a request, the unit of politeness."""

from __future__ import annotations

from scrapy import Request
from scrapy.utils.httpobj import urlparse_cached

from crawler.identity import netloc_key

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


SEND_WINDOW = 10.0
"""The frontier script's: how long it holds a slot at least for the request handed it."""


def stale_after(delay: float) -> float:
    """Seconds after its slot past which a handed-out request, or a slot granted and not yet
    used, takes a fresh one: half the send window before the frontier's hold of the slot ends,
    so that its request has told Redis it left well before another process could take the next
    slot."""
    return max(delay, SEND_WINDOW) - SEND_WINDOW / 2


def domain_key(request: Request) -> str:
    """The unit of politeness: host and port, as robots.txt is scoped."""
    return netloc_key(urlparse_cached(request).netloc)


def robots_holder(domain: str) -> str:
    """The holder of the slot of a domain's robots.txt fetch."""
    return f"robots:{domain}"  # frontier.lua names its robots.txt claims the same way

"""Why a request ends without a page, beyond Scrapy's own exceptions: each is a row of its own
status with the reason in its message (``crawler.outcomes``)."""

from __future__ import annotations

from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response


class BlockedByPolicy(IgnoreRequest):
    """A request refused before it reached the network (an address the guard refuses, a
    redirect out of scope); its row is ``blocked_by_policy`` and the message says why."""


class RedirectRefused(BlockedByPolicy):
    """A redirect to a URL out of scope or at a refused address: the URL that redirected may
    itself be fine."""


class RedirectFailed(IgnoreRequest):
    """A redirect chain that ends without a page (a loop, too many hops); the message says how."""


class ResponseFiltered(IgnoreRequest):
    """A response the crawl does not keep (its content type, binary content); the message says why."""

    def __init__(self, reason: str, response: Response | None = None):
        super().__init__(reason)
        self.response = response


class TrapRefused(ResponseFiltered):
    """A queued page the trap rules refuse before it leaves: its pattern gave twins meanwhile."""


class RobotsUnreachable(IgnoreRequest):
    """The site gave no answer at all for its robots.txt: its pages are errors, not refusals."""


class NotSent(IgnoreRequest):
    """A request the job ended before it could leave (its domain paused by an operator); its row
    is ``skipped`` and the message says why."""


class ProxyRefused(IgnoreRequest):
    """The proxy refused the crawler's credentials (407); the message names the proxy."""

"""The exception of a request the crawl's safety policy refuses, and how a refusal is reported."""

from __future__ import annotations

import logging

from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.statscollectors import StatsCollector

from crawler.guard.addresses import Refusal

logger = logging.getLogger(__name__)


class BlockedByPolicy(IgnoreRequest):
    """A request refused before it reached the network (an address the guard refuses, a
    redirect out of scope); its row is ``blocked_by_policy`` and the message says why."""


class RedirectRefused(BlockedByPolicy):
    """A redirect to a URL out of scope or at a refused address: the URL that redirected may
    itself be fine."""


def refuse(stats: StatsCollector | None, request: Request, refusal: Refusal) -> BlockedByPolicy:
    """Count and log an address refusal; the exception to raise for it."""
    if stats is not None:
        stats.inc_value(f"address_guard/refused/{refusal.category}")
    logger.info("Address guard refused %s: %s", request.url, refusal.reason)
    return BlockedByPolicy(f"address refused: {refusal.reason}")

"""How an address refusal is reported: a stat, a log line and the exception its row is made of."""

from __future__ import annotations

import logging

from scrapy import Request
from scrapy.statscollectors import StatsCollector

from crawler.exceptions import BlockedByPolicy
from crawler.guard.addresses import Refusal

logger = logging.getLogger(__name__)


def refuse(stats: StatsCollector | None, request: Request, refusal: Refusal) -> BlockedByPolicy:
    """Count and log an address refusal; the exception to raise for it."""
    if stats is not None:
        stats.inc_value(f"address_guard/refused/{refusal.category}")
    logger.info("Address guard refused %s: %s", request.url, refusal.reason)
    return BlockedByPolicy(f"address refused: {refusal.reason}")

"""Scrapy's in-memory stats collector, read without its deprecation check on every access.

Scrapy 2.19's ``StatsCollector.__getattribute__`` runs on every attribute read of the collector,
its own included (an f-string, then a failed lookup that raises and catches ``AttributeError``),
to wrap the methods in a check for the deprecated ``spider`` argument: a crawl reads its stats
some sixty times a page, and that check was the largest single cost of Scrapy's machinery left
in a profile of this crawler. The methods are Scrapy's own and still take ``spider``, ignored
as Scrapy ignores it, without the warning.
"""

from __future__ import annotations

from scrapy.statscollectors import MemoryStatsCollector


class PlainMemoryStatsCollector(MemoryStatsCollector):
    __getattribute__ = object.__getattribute__

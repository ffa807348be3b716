"""The stats collector: Scrapy's memory stats, read without a check on every access."""

from __future__ import annotations

import hashlib
import inspect
import warnings

from scrapy import Spider
from scrapy.statscollectors import StatsCollector
from scrapy.utils.test import get_crawler

from crawler.stats import PlainMemoryStatsCollector
from tests.helpers import project_settings


def test_the_project_collects_stats_as_scrapy_does() -> None:
    crawler = get_crawler(Spider, project_settings())
    stats = crawler.stats
    assert isinstance(stats, PlainMemoryStatsCollector)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecation warning either way of calling
        stats.inc_value("pages")
        stats.inc_value("pages", 2)
        stats.inc_value("bytes", 10, start=100)
        stats.set_value("state", "open")
        stats.max_value("largest", 5)
        stats.max_value("largest", 3)
        stats.min_value("smallest", 5)
        stats.min_value("smallest", 3)
        stats.inc_value("pages", spider=None)
    assert stats.get_stats() == {"pages": 4, "bytes": 110, "state": "open", "largest": 5, "smallest": 3}
    assert stats.get_value("missing", "default") == "default"
    crawler.spider = Spider("named")
    stats.close_spider()
    assert stats.spider_stats["named"]["pages"] == 4


def test_scrapy_s_attribute_hook_is_still_only_the_deprecation_check() -> None:
    # The collector skips Scrapy's __getattribute__, which in Scrapy 2.19 only wraps the methods
    # in a warning about their spider argument. If Scrapy changes it, read what it does now.
    source = inspect.getsource(StatsCollector.__getattribute__)
    assert hashlib.sha256(source.encode()).hexdigest()[:16] == "a21e390ac4030d4c", source

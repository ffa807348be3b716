"""Once the spider opens, the objects that exist are frozen out of later garbage collections,
and a debug line says how many."""

from __future__ import annotations

import gc
import logging
import re
from collections.abc import Iterator

import pytest
from scrapy import Spider
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from crawler.extensions.gc_freeze import GcFreeze


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    try:
        yield
    finally:
        gc.unfreeze()


def test_the_objects_that_exist_are_frozen_when_the_spider_opens(unfrozen: None) -> None:
    extension = GcFreeze.from_crawler(get_crawler(Spider, {"CRAWLER_GC_FREEZE": True}))
    assert gc.get_freeze_count() == 0
    extension.spider_opened()
    assert gc.get_freeze_count() > 1000  # the modules' functions and classes, the crawler's objects


def test_off_by_its_setting() -> None:
    with pytest.raises(NotConfigured):
        GcFreeze.from_crawler(get_crawler(Spider, {"CRAWLER_GC_FREEZE": False}))


def test_a_debug_line_says_how_many_were_frozen(unfrozen: None, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="crawler.extensions.gc_freeze")
    GcFreeze().spider_opened()
    (line,) = [r.getMessage() for r in caplog.records if r.name == "crawler.extensions.gc_freeze"]
    frozen = re.fullmatch(r"Froze (\d+) objects out of garbage collection in \d+\.\d{3} s", line)
    assert frozen is not None and int(frozen[1]) > 1000, line


def test_they_are_not_counted_for_a_debug_line_nobody_writes(
    unfrozen: None, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Counting walks every frozen object (some 6 ms at a crawl's start).
    caplog.set_level(logging.INFO, logger="crawler.extensions.gc_freeze")

    def counted() -> int:
        raise AssertionError("counted for nothing")

    monkeypatch.setattr(gc, "get_freeze_count", counted)
    GcFreeze().spider_opened()
    assert [r for r in caplog.records if r.name == "crawler.extensions.gc_freeze"] == []

"""The exit status of each way a job can end, and the log line of an item."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest
from scrapy.utils.test import get_crawler

from crawler import exitcodes
from crawler.items import PageItem
from crawler.logformatter import BriefLogFormatter
from crawler.spiders.links import LinksSpider


@pytest.mark.parametrize(
    ("reason", "unsaved_rows", "status"),
    [
        ("finished", 0, exitcodes.FINISHED),
        ("closespider_timeout", 0, exitcodes.FINISHED),
        ("closespider_pagecount", 0, exitcodes.FINISHED),
        ("finished", 3, exitcodes.DATABASE_UNREACHABLE),
        ("failed_database_unreachable", 0, exitcodes.DATABASE_UNREACHABLE),
        ("failed_database_refused", 0, exitcodes.DATABASE_REFUSED),
        ("failed_consecutive_errors", 0, exitcodes.JOB_FAILED),
        ("cancelled_429_streak", 0, exitcodes.JOB_FAILED),
        ("closespider_errorcount", 0, exitcodes.JOB_FAILED),
        ("failed_something_new", 0, exitcodes.JOB_FAILED),
        ("failed_seeds_unreachable", 0, exitcodes.SEEDS_UNREACHABLE),
        ("failed_already_running", 0, exitcodes.ALREADY_RUNNING),
        ("shutdown", 0, exitcodes.STOPPED),
        ("shutdown", 5, exitcodes.STOPPED),
        ("cancelled", 0, exitcodes.STOPPED),
        (None, 0, exitcodes.STOPPED),
    ],
)
def test_exit_status_of_each_close_reason(reason: str | None, unsaved_rows: int, status: int) -> None:
    assert exitcodes.exit_status(reason, unsaved_rows=unsaved_rows) == status


def test_statuses_are_distinct() -> None:
    codes = [
        exitcodes.FINISHED,
        exitcodes.BOOTSTRAP_FAILED,
        exitcodes.USAGE,
        exitcodes.DATABASE_UNREACHABLE,
        exitcodes.DATABASE_REFUSED,
        exitcodes.JOB_FAILED,
        exitcodes.SEEDS_UNREACHABLE,
        exitcodes.ALREADY_RUNNING,
        exitcodes.STOPPED,
    ]
    assert len(set(codes)) == len(codes)


def test_a_scraped_item_is_logged_by_status_and_url_only() -> None:
    crawler = get_crawler(LinksSpider)
    formatter = BriefLogFormatter.from_crawler(crawler)
    item = PageItem(
        url="https://e.example/a",
        url_hash="h",
        surt_key="s",
        domain="e.example",
        status="fetched",
        crawled_at=datetime.now(UTC),
        text="page text " * 1000,
        body=b"<html>" * 1000,
    )
    spider = LinksSpider(url="https://e.example/")
    spider.crawler = crawler
    entries = {
        "scraped": formatter.scraped(item, None, spider),
        "dropped": formatter.dropped(item, ValueError("bad"), None, spider),
        "item_error": formatter.item_error(item, ValueError("bad"), None, spider),
    }
    for kind, entry in entries.items():
        message = entry["msg"] % entry["args"]
        assert "fetched https://e.example/a" in message, kind
        assert "page text" not in message and "<html>" not in message, kind
    assert entries["scraped"]["level"] == logging.DEBUG

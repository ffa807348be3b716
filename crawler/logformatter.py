"""Log items by what identifies them, never whole: a row holds the page's body and text, and
Scrapy's own formatter dumps it into the log (megabytes for a few pages at DEBUG)."""

from __future__ import annotations

from typing import Any

from itemadapter import ItemAdapter
from scrapy import Spider
from scrapy.http import Response
from scrapy.logformatter import LogFormatter, LogFormatterResult
from twisted.python.failure import Failure


def brief(item: Any) -> str:
    """The item's URL and status (``fetched https://example.com/``)."""
    adapter = ItemAdapter(item)
    return (
        " ".join(str(adapter[key]) for key in ("status", "url") if adapter.get(key) is not None) or type(item).__name__
    )


class _Brief:
    """``brief(item)``, made when a handler formats the record: Scrapy asks for the line of
    every item scraped, which is logged at DEBUG, mostly to no handler."""

    __slots__ = ("item",)

    def __init__(self, item: Any):
        self.item = item

    def __str__(self) -> str:
        return brief(self.item)


class BriefLogFormatter(LogFormatter):
    def scraped(self, item: Any, response: Response | Failure | None, spider: Spider) -> LogFormatterResult:
        result = super().scraped(item, response, spider)
        return {**result, "msg": "Scraped %(item)s", "args": {"item": _Brief(item)}}

    def dropped(
        self, item: Any, exception: BaseException, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult:
        result = super().dropped(item, exception, response, spider)
        return {
            **result,
            "msg": "Dropped %(item)s: %(exception)s",
            "args": {"item": brief(item), "exception": exception},
        }

    def item_error(
        self, item: Any, exception: BaseException, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult:
        result = super().item_error(item, exception, response, spider)
        return {**result, "args": {"item": brief(item)}}

"""Debug calls that no handler would write cost nothing.

Scrapy leaves the root logger at ``NOTSET`` and filters by ``LOG_LEVEL`` in its handler, so every
``logger.debug`` call of Scrapy and of this project builds a log record that the handler then
drops: some 60,000 a paced crawl of 10,000 hosts at ``LOG_LEVEL = "WARNING"``, about 1% of its
CPU. Once the crawler is built, the ``crawler`` and ``scrapy`` loggers get the lowest level of
the handlers that could write their records (the root's and their own), so a call below it
returns at once: unless a level was set on purpose (Scrapy's own ``DEBUG`` for ``scrapy``, set
by ``configure_logging`` whatever ``LOG_LEVEL`` says, does not count). A handler that takes every level (a test's log capture, a user's own debug
file) keeps every record coming; one added after the crawl started sees only what its loggers
let through.
"""

from __future__ import annotations

import logging
from typing import Self

from scrapy.crawler import Crawler
from scrapy.utils.log import DEFAULT_LOGGING

LOGGERS = ("crawler", "scrapy")
_levels_set: dict[str, int] = {}
"""The level this extension gave each logger: the next crawler of the process may set it again."""


def lowest_handler_level(logger: logging.Logger) -> int:
    """The lowest level any handler reached by ``logger``'s records writes (``NOTSET``, 0, when
    one writes every level or none is there: then nothing is filtered early)."""
    levels = []
    current: logging.Logger | None = logger
    while current is not None:
        levels += [handler.level for handler in current.handlers]
        current = current.parent if current.propagate else None
    return min(levels, default=logging.NOTSET)


def _scrapy_default(name: str) -> int:
    """The level Scrapy's ``configure_logging`` gives the logger ``name`` (``NOTSET``: none)."""
    return logging.getLevelName(DEFAULT_LOGGING["loggers"].get(name, {}).get("level", "NOTSET"))


class LogThreshold:
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        for name in LOGGERS:
            logger = logging.getLogger(name)
            if logger.level in (logging.NOTSET, _scrapy_default(name), _levels_set.get(name)):
                _levels_set[name] = lowest_handler_level(logger)
                logger.setLevel(_levels_set[name])
        return cls()

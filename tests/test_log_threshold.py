"""Loggers skip debug calls that no handler would write, and keep them where one would."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from scrapy.utils.log import DEFAULT_LOGGING
from scrapy.utils.test import get_crawler

from crawler.extensions import log_threshold
from crawler.extensions.log_threshold import LOGGERS, LogThreshold, lowest_handler_level


def handler_at(level: int) -> logging.Handler:
    handler = logging.NullHandler()
    handler.setLevel(level)
    return handler


def test_the_lowest_level_is_that_of_every_handler_up_to_the_root() -> None:
    root = logging.Logger("root", logging.WARNING)
    child = logging.Logger("child")
    child.parent = root
    assert lowest_handler_level(child) == logging.NOTSET  # no handler: nothing to filter early
    root.addHandler(handler_at(logging.WARNING))
    assert lowest_handler_level(child) == logging.WARNING
    child.addHandler(handler_at(logging.INFO))
    assert lowest_handler_level(child) == logging.INFO
    root.addHandler(handler_at(logging.NOTSET))  # one that writes every level
    assert lowest_handler_level(child) == logging.NOTSET


def test_a_logger_that_does_not_propagate_looks_no_further() -> None:
    root = logging.Logger("root")
    root.addHandler(handler_at(logging.DEBUG))
    child = logging.Logger("child")
    child.parent = root
    child.addHandler(handler_at(logging.ERROR))
    child.propagate = False
    assert lowest_handler_level(child) == logging.ERROR


@contextmanager
def root_handlers(*levels: int) -> Iterator[list[logging.Handler]]:
    """The root logger as Scrapy leaves it (level ``NOTSET``) with handlers at ``levels`` only,
    for the block (the test's own log capture set aside), then back as it was."""
    saved_handlers, saved_root_level = logging.root.handlers, logging.root.level
    saved_levels = {name: logging.getLogger(name).level for name in LOGGERS}
    logging.root.handlers = [handler_at(level) for level in levels]
    logging.root.setLevel(logging.NOTSET)
    try:
        yield logging.root.handlers
    finally:
        logging.root.handlers = saved_handlers
        logging.root.setLevel(saved_root_level)
        for name, level in saved_levels.items():
            logging.getLogger(name).setLevel(level)
        log_threshold._levels_set.clear()


def test_the_project_loggers_skip_what_the_handlers_would_drop() -> None:
    with root_handlers(logging.WARNING):
        LogThreshold.from_crawler(get_crawler())
        for name in LOGGERS:
            assert not logging.getLogger(f"{name}.anything").isEnabledFor(logging.INFO)
            assert logging.getLogger(f"{name}.anything").isEnabledFor(logging.WARNING)


def test_a_handler_of_every_level_keeps_every_record() -> None:
    with root_handlers(logging.WARNING, logging.NOTSET):
        LogThreshold.from_crawler(get_crawler())
        assert logging.getLogger("crawler.anything").isEnabledFor(logging.DEBUG)


def test_the_next_crawler_lowers_the_level_it_set_but_not_one_set_on_purpose() -> None:
    with root_handlers(logging.WARNING) as handlers:
        LogThreshold.from_crawler(get_crawler())
        handlers[0].setLevel(logging.DEBUG)
        logging.getLogger("scrapy").setLevel(logging.ERROR)  # an operator's choice
        LogThreshold.from_crawler(get_crawler())
        assert logging.getLogger("crawler").level == logging.DEBUG
        assert logging.getLogger("scrapy").level == logging.ERROR


def test_scrapy_s_own_level_for_its_logger_is_not_taken_for_an_operator_s() -> None:
    with root_handlers(logging.WARNING):
        # What configure_logging (scrapy crawl) does to it, whatever LOG_LEVEL says.
        logging.getLogger("scrapy").setLevel(DEFAULT_LOGGING["loggers"]["scrapy"]["level"])
        LogThreshold.from_crawler(get_crawler())
        assert not logging.getLogger("scrapy.core.engine").isEnabledFor(logging.INFO)

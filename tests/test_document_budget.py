"""Documents parsed off the reactor within a time and a depth budget: a page built to be slow to
parse ends as an error row while the reactor keeps turning and the other pages are crawled."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Self

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy import signals
from scrapy.crawler import Crawler
from selectolax.lexbor import LexborHTMLParser
from twisted.internet.task import LoopingCall

from crawler.extraction import budget
from crawler.extraction.budget import (
    _KNOWN_TAGS,
    _NOT_NESTING_WORDS,
    _STEPS,
    INLINE_BYTES,
    BudgetExceeded,
    DocumentWorkers,
    nesting_depth,
    nesting_depth_in_python,
)
from tests.helpers import Database, crawl
from tests.testweb import TestWeb
from tests.testweb.sites import attributes_page

logger = logging.getLogger(__name__)
TICK = 0.05


class ReactorLagProbe:
    """Logs, when the spider closes, how late a tick every ``TICK`` s came at worst."""

    def __init__(self) -> None:
        self.worst = 0.0
        self.last = time.monotonic()
        self.ticks = LoopingCall(self.tick)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        probe = cls()
        crawler.signals.connect(probe.opened, signal=signals.spider_opened)
        crawler.signals.connect(probe.closed, signal=signals.spider_closed)
        return probe

    def tick(self) -> None:
        now = time.monotonic()
        self.worst = max(self.worst, now - self.last - TICK)
        self.last = now

    def opened(self) -> None:
        self.last = time.monotonic()
        self.ticks.start(TICK, now=False)

    def closed(self) -> None:
        self.ticks.stop()
        logger.warning("reactor lag at worst %.3f s", self.worst)


COMPILED_MISSING = "crawler/extraction/_depth.c is not built: scripts/compile.sh builds it (it needs a C compiler)"


def _depth(name: str) -> Callable[[bytes], int]:
    """``nesting_depth`` computed by the compiled module or by the Python one (read whole)."""
    if name == "python":
        return lambda html: nesting_depth_in_python(html, chunk=len(html) + 1)
    compiled = budget._compiled
    assert compiled is not None, COMPILED_MISSING
    return lambda html: compiled(html, _NOT_NESTING_WORDS)


IMPLEMENTATIONS = ("compiled", "python")


def test_the_crawl_takes_the_compiled_nesting_depth() -> None:
    assert budget._compiled is not None, COMPILED_MISSING
    document = b"<div>" * 40 + b"<p>x" * 40 + b"</div>" * 40
    assert nesting_depth(document) == _depth("compiled")(document) == _depth("python")(document) == 40


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_nesting_depth_counts_the_elements_that_need_an_end_tag(implementation: str) -> None:
    depth = _depth(implementation)
    assert depth(b"<div>" * 30 + b"x" + b"</div>" * 30) == 30
    assert depth(b"<p><p><li><br><img src=x><DIV><Span>x</span></div>") == 2  # void and optional end tags
    assert depth(b"<COLGROUP><optgroup><OptGroup>") == 0  # the longest names that do not nest
    assert depth(b"<colgroupx><Optgroups><bodyx>") == 3  # longer names that begin with them nest
    assert depth(b"</div></div></b><div><div>x</div></div>") == 2  # stray end tags do not count
    assert depth(b"<b>a</b><b>b</b><i><b>c</b></i>") == 2
    assert depth(b"") == 0
    assert depth(b"<<div><1><-a></ div></><a-1><x9 <") == 3  # what is not a tag, and what is
    assert depth(b"<div></") == depth(b"<div><") == 1  # cut at the end


def test_a_tag_cut_between_chunks_is_lost_in_python() -> None:
    assert abs(nesting_depth_in_python(b"<span>" * 5000, chunk=4096) - 5000) < 10


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_made_up_tag_names_nest_as_any_other_and_are_not_all_remembered(implementation: str) -> None:
    names = [f"x-{i}".encode() for i in range(10_000)]
    document = b"".join(b"<%s>" % name for name in names) + b"".join(b"</%s>" % name for name in reversed(names))
    assert _depth(implementation)(document) == 10_000
    assert len(_STEPS) <= _KNOWN_TAGS


_TAGS = ["<div>", "</div>", "<SPAN>", "</span>", "<p>", "</p>", "<br>", "<li>", "x", " "]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_TAGS), max_size=60))
def test_nesting_depth_is_the_deepest_open_element(implementation: str, parts: list[str]) -> None:
    """Against a tag-by-tag count (stray end tags ignored)."""
    level = deepest = 0
    for part in parts:
        if part.lower() in ("<div>", "<span>"):
            level += 1
        elif part in ("</div>", "</span>"):
            level = max(0, level - 1)
        deepest = max(deepest, level)
    assert _depth(implementation)("".join(parts).encode()) == deepest


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_TAGS), max_size=60), st.sampled_from([8, 64]))
def test_in_python_the_depth_is_the_same_read_one_tag_a_chunk(parts: list[str], chunk: int) -> None:
    document = "".join(part.ljust(chunk) for part in parts).encode()
    assert nesting_depth_in_python(document, chunk=chunk) == _depth("python")(document)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(["<", "</", "/", ">", "a", "B", "1", "-", " ", "p", "li", "br", "div", "x-y"])))
def test_the_compiled_depth_reads_tags_as_the_regular_expression_does(parts: list[str]) -> None:
    document = "".join(parts).encode()
    assert _depth("compiled")(document) == _depth("python")(document)


def test_the_compiled_depth_refuses_what_it_cannot_read() -> None:
    compiled = budget._compiled
    assert compiled is not None, COMPILED_MISSING
    with pytest.raises(TypeError, match="two bytes objects, not str and bytes"):
        compiled("<div>", _NOT_NESTING_WORDS)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at most 64 names of at most 8 bytes"):
        compiled(b"<div>", b"br blockquote")


def test_a_document_over_the_time_budget_is_given_up_and_the_loop_keeps_turning() -> None:
    workers = DocumentWorkers(threads=1, timeout=0.3, max_depth=0)
    nested = (
        "<div>" * 40_000 + "</div>" * 40_000
    )  # about 2 s of lexbor's time (0.3 s at 15,000: its cost grows as the square)

    async def parse_while_ticking() -> float:
        worst, last = 0.0, time.monotonic()

        async def ticks() -> None:
            nonlocal worst, last
            while True:
                await asyncio.sleep(0.01)
                now = time.monotonic()
                worst, last = max(worst, now - last - 0.01), now

        ticking = asyncio.ensure_future(ticks())
        started = time.monotonic()
        with pytest.raises(BudgetExceeded, match="not handled within 0.3 s"):
            await workers.run(lambda: LexborHTMLParser(nested), len(nested))
        assert time.monotonic() - started < 1.0
        ticking.cancel()
        return worst

    try:
        assert asyncio.run(parse_while_ticking()) < 0.2
    finally:
        workers.close()


def test_a_document_nested_too_deep_is_refused_before_it_is_parsed() -> None:
    workers = DocumentWorkers(threads=1, timeout=0, max_depth=100)
    workers.check_depth(b"<div>" * 100 + b"</div>" * 100)
    with pytest.raises(BudgetExceeded, match="nested 101 deep, more than 100"):
        workers.check_depth(b"<div>" * 101)
    workers.close()


@pytest.fixture
def database(tmp_path: Path) -> Database:
    return Database(f"sqlite:///{tmp_path / 'crawler.db'}")  # storage is not the subject


@pytest.mark.integration
def test_a_deeply_nested_page_is_an_error_row_and_the_reactor_never_stalls(web: TestWeb, database: Database) -> None:
    extensions = json.dumps({f"{__name__}.ReactorLagProbe": 0})
    result = crawl("links", database, url=web.url("deep"), settings={"EXTENSIONS": extensions})
    lag = float(re.search(r"reactor lag at worst ([\d.]+) s", result.stderr).group(1))
    assert lag < 1.0
    pages = database.pages()
    deep = pages[web.url("deep", "/deep/400000")]
    assert deep["status"] == "error" and re.search(r"elements nested \d+ deep, more than 5000", deep["error"])
    assert [pages[web.url("deep", f"/p/{n}")]["status"] for n in range(20)] == ["fetched"] * 20


@pytest.mark.integration
def test_a_page_built_to_be_slow_to_parse_is_given_up_in_the_thread_while_the_reactor_turns(
    web: TestWeb, database: Database
) -> None:
    # One element of 20,000 attributes, which lexbor reads in a time that grows with the square
    # of their number: past INLINE_BYTES, so parsed in the thread, which gives it up in time.
    extensions = json.dumps({f"{__name__}.ReactorLagProbe": 0})
    settings = {"EXTENSIONS": extensions, "CRAWLER_EXTRACT_TIMEOUT": "0.3"}
    result = crawl("links", database, url=web.url("attributes"), settings=settings)
    lag = float(re.search(r"reactor lag at worst ([\d.]+) s", result.stderr).group(1))
    assert lag < 0.3
    pages = database.pages()
    assert len(attributes_page(20_000).body) > INLINE_BYTES  # so parsed in the thread
    slow = pages[web.url("attributes", "/attributes/20000")]
    assert slow["status"] == "error" and slow["error"].endswith("BudgetExceeded: not handled within 0.3 s")
    assert [pages[web.url("attributes", f"/p/{n}")]["status"] for n in range(10)] == ["fetched"] * 10

"""Documents parsed within a time budget, on the reactor first and in a thread after, and shapes
refused before they are parsed: a page built to be slow to parse ends as an error row while the
reactor keeps turning and the other pages are crawled."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import re
import threading
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

from crawler.extraction import budget, html
from crawler.extraction.budget import (
    _KNOWN_TAGS,
    _NOT_NESTING_WORDS,
    _STEPS,
    INLINE_BYTES,
    Budget,
    BudgetExceeded,
    DocumentWorkers,
    document_shape,
    most_attributes_in_python,
    nesting_depth_in_python,
)
from tests.helpers import Database, crawl
from tests.testweb import TestWeb
from tests.testweb.sites import options_page

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
    """The depth of ``document_shape`` computed by the compiled module or by the Python one (read
    whole)."""
    if name == "python":
        return lambda html: nesting_depth_in_python(html, chunk=len(html) + 1)
    compiled = budget._compiled
    assert compiled is not None, COMPILED_MISSING
    return lambda html: compiled(html, _NOT_NESTING_WORDS)[0]


def _attributes(name: str) -> Callable[[bytes], int]:
    """The most attributes of ``document_shape``, computed by the compiled module or in Python."""
    if name == "python":
        return most_attributes_in_python
    compiled = budget._compiled
    assert compiled is not None, COMPILED_MISSING
    return lambda html: compiled(html, _NOT_NESTING_WORDS)[1]


IMPLEMENTATIONS = ("compiled", "python")


def test_the_crawl_takes_the_compiled_shape() -> None:
    assert budget._compiled is not None, COMPILED_MISSING
    document = b"<div>" * 40 + b"<p a b=c>x" * 40 + b"</div>" * 40
    assert document_shape(document) == (_depth("compiled")(document), _attributes("compiled")(document)) == (40, 2)
    assert (_depth("python")(document), _attributes("python")(document)) == (40, 2)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize(
    ("document", "attributes"),
    [
        (b"<p a b=1 c='x' d=\"y>z\" e=f/g>", 5),  # a quoted value may hold ">"
        (b"<p a='unclosed <b c d e f>", 1),  # to the end of the document
        (b'<div x="<p a b c>">', 1),  # a tag inside another's attributes has none of its own
        (b"<p <div a b>", 3),  # "<" starts a name, as in HTML's tokenizer
        (b"</div a b>", 2),  # an end tag's count too
        (b'<a href = "x" >', 1),
        (b"<br/><img/src=x/>", 1),
        (b"<p =a>", 1),
        (b"<p" + b" a" * 300 + b"><i>", 300),
        (b"no tags at all", 0),
    ],
)
def test_attributes_are_read_as_html_tokenizes_them(implementation: str, document: bytes, attributes: int) -> None:
    assert _attributes(implementation)(document) == attributes


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


@settings(max_examples=1000, deadline=None)
@given(
    st.lists(st.sampled_from(["<", "</", "p", "div", " ", "\t", "=", '"', "'", ">", "/", "a", "x-y", "<br", "\x0b"]))
)
def test_the_compiled_attributes_are_read_as_the_regular_expressions_do(parts: list[str]) -> None:
    document = "".join(parts).encode()
    assert _attributes("compiled")(document) == _attributes("python")(document)


def test_the_compiled_shape_refuses_what_it_cannot_read() -> None:
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

        def parse() -> None:
            LexborHTMLParser(nested)
            parsed.set()

        parsed = threading.Event()
        ticking = asyncio.ensure_future(ticks())
        with pytest.raises(BudgetExceeded, match="not handled within 0.3 s of CPU"):
            await workers.run(parse)
        assert not parsed.is_set()  # given up at the budget, not once lexbor was done
        ticking.cancel()
        return worst

    try:
        assert asyncio.run(parse_while_ticking()) < 0.2
    finally:
        workers.close()


def test_the_time_budget_is_the_thread_s_cpu_time_not_the_time_on_the_wall() -> None:
    # A thread that does not get the core (a machine busy with other work) has not spent it:
    # a page read meanwhile is not late. One that spends it is given up at the budget.
    workers = DocumentWorkers(threads=1, timeout=0.2, max_depth=0)

    def waiting() -> str:
        time.sleep(0.5)
        return "read"

    def spinning() -> str:
        started = time.thread_time()
        while time.thread_time() - started < 0.6:
            pass
        return "read"

    async def both() -> None:
        assert await workers.run(waiting) == "read"
        with pytest.raises(BudgetExceeded, match="not handled within 0.2 s"):
            await workers.run(spinning)

    try:
        asyncio.run(both())
    finally:
        workers.close()


def test_what_a_thread_given_up_ends_with_is_not_logged_as_an_exception_never_retrieved() -> None:
    workers = DocumentWorkers(threads=1, timeout=0.1, max_depth=0)
    reported: list[dict[str, object]] = []

    def gives_up_late() -> str:  # as a walk does, at its next chunk past the budget
        started = time.thread_time()
        while time.thread_time() - started < 0.3:
            pass
        raise TimeoutError("not read within 0.1 s of CPU")

    async def given_up() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: reported.append(context))
        with pytest.raises(BudgetExceeded, match="not handled within 0.1 s of CPU"):
            await workers.run(gives_up_late)
        await workers.run(lambda: "the thread is free again")  # the late one has ended
        gc.collect()  # a future's unretrieved exception is reported when it is collected

    try:
        asyncio.run(given_up())
    finally:
        workers.close()
    assert reported == []


def test_a_thread_that_gets_no_core_is_given_up_on_the_wall() -> None:
    # A thread blocked (here on an event nobody sets until the end) spends no CPU.
    workers = DocumentWorkers(threads=1, timeout=0.02, max_depth=0)
    release = threading.Event()

    async def blocked() -> None:
        with pytest.raises(BudgetExceeded, match=r"not handled within 0.2 s on the wall \(0.02 s of CPU not spent"):
            await workers.run(release.wait)

    try:
        asyncio.run(blocked())
    finally:
        release.set()
        workers.close()


def test_a_budget_without_a_thread_clock_counts_the_seconds_on_the_wall(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "_thread_clock", None)  # as on macOS
    spent = budget._cpu_seconds_from_now()
    time.sleep(0.05)
    assert spent() >= 0.05


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_document_nested_too_deep_or_too_wide_is_refused_before_it_is_parsed(
    implementation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if implementation == "python":
        monkeypatch.setattr(budget, "_compiled", None)
    workers = DocumentWorkers(threads=1, timeout=0, max_depth=100, max_attributes=10)
    assert workers.check_shape(b"<div>" * 100 + b"</div>" * 100 + b"<p a b c d e f g h i j>") == (100, 10)
    with pytest.raises(BudgetExceeded, match="nested 101 deep, more than 100"):
        workers.check_shape(b"<div>" * 101)
    with pytest.raises(BudgetExceeded, match="an element with 11 attributes, more than 10"):
        workers.check_shape(b"<p a b c d e f g h i j k>")
    workers.close()


_SLOW = options_page(16_000).body
"""lexbor takes some 10 s to read it, the time growing with the square of the options, spread over
the whole document (300 KB)."""


def test_the_compiled_walk_gives_a_document_up_at_its_time() -> None:
    assert html.walk_is_bounded(), COMPILED_MISSING
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="not read within 0.05 s"):
        html.walk(_SLOW, seconds=0.05)
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 4096])
def test_the_compiled_walk_reads_a_document_cut_in_chunks_as_it_reads_it_whole(chunk: int) -> None:
    assert html._compiled_walk is not None, COMPILED_MISSING
    document = "<html><head><title>Tïtle é 日本</title><meta name=a content='b'></head><body><p>x ü\u3000y</p>"
    document += "<a href='/x' rel=nofollow>x</a><!-- c --><script>s</script>" * 50 + "</body></html>"
    whole = html._compiled_walk(document.encode(), html._KINDS)
    assert html._compiled_walk(document.encode(), html._KINDS, 0, chunk) == whole


def _in_thread() -> bool:
    return threading.current_thread().name.startswith("documents")


def test_a_small_page_is_read_on_the_reactor_and_in_a_thread_when_it_takes_too_long() -> None:
    workers = DocumentWorkers(threads=1, timeout=5, max_depth=0, inline_seconds=0.05)
    budgets: list[tuple[Budget, bool]] = []

    def work(budget: Budget) -> str:
        budgets.append((budget, _in_thread()))
        if budget.may_hand_over:
            raise TimeoutError("no time now")
        return "read"

    try:
        assert asyncio.run(workers.extract(work, INLINE_BYTES, bounded=True)) == "read"
        assert budgets == [(Budget(0.05, may_hand_over=True), False), (Budget(5, may_hand_over=False), True)]
        budgets.clear()
        assert asyncio.run(workers.extract(work, INLINE_BYTES + 1, bounded=True)) == "read"
        assert budgets == [(Budget(5, may_hand_over=False), True)]  # a large one in the thread at once
        budgets.clear()
        # A walk that cannot be given a time: a small page on the reactor, however long it takes.
        assert asyncio.run(workers.extract(work, INLINE_BYTES, bounded=False)) == "read"
        assert budgets == [(Budget(0, may_hand_over=False), False)]
    finally:
        workers.close()


def test_a_walk_given_up_at_the_timeout_frees_its_thread() -> None:
    assert html.walk_is_bounded(), COMPILED_MISSING
    workers = DocumentWorkers(threads=1, timeout=0.3, max_depth=0)

    async def slow_then_quick() -> float:
        with pytest.raises(BudgetExceeded, match="not handled within 0.3 s"):
            await workers.run(lambda: html.walk(_SLOW, seconds=workers.timeout))
        started = time.monotonic()
        await workers.run(lambda: html.walk(b"<p>quick</p>"))
        return time.monotonic() - started

    try:
        # Without the walk's own limit, the thread would go on reading the slow page for seconds.
        assert asyncio.run(slow_then_quick()) < 1.0
    finally:
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
def test_pages_built_to_be_slow_to_parse_are_refused_or_given_up_while_the_reactor_turns(
    web: TestWeb, database: Database
) -> None:
    # One element of 20,000 attributes, which lexbor reads at once in a time that grows with the
    # square of their number: refused before it is parsed. A select of 16,000 selected options,
    # whose cost grows likewise but is spread over the page: given up in the thread at the
    # timeout. One of 2,000 (0.07 s), within INLINE_BYTES: given up on the reactor after
    # CRAWLER_EXTRACT_INLINE_SECONDS, then read in the thread.
    extensions = json.dumps({f"{__name__}.ReactorLagProbe": 0})
    settings = {"EXTENSIONS": extensions, "CRAWLER_EXTRACT_TIMEOUT": "0.3", "CRAWLER_EXTRACT_INLINE_SECONDS": "0.01"}
    result = crawl("links", database, url=web.url("attributes"), settings=settings)
    lag = float(re.search(r"reactor lag at worst ([\d.]+) s", result.stderr).group(1))
    assert lag < 0.3
    pages = database.pages()
    wide = pages[web.url("attributes", "/attributes/20000")]
    assert wide["status"] == "error"
    assert wide["error"].endswith("BudgetExceeded: an element with 20000 attributes, more than 10000")
    slow = pages[web.url("attributes", "/options/16000")]
    assert slow["status"] == "error" and slow["error"].endswith("BudgetExceeded: not handled within 0.3 s of CPU")
    assert len(options_page(2000).body) <= INLINE_BYTES < len(options_page(16_000).body)
    assert pages[web.url("attributes", "/options/2000")]["status"] == "fetched"
    assert "'extraction/handed_to_thread': 1," in result.stderr
    assert [pages[web.url("attributes", f"/p/{n}")]["status"] for n in range(10)] == ["fetched"] * 10

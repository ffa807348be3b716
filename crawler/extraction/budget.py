"""Parsing and extraction of documents within a time budget, and shapes refused before.

While a page is parsed on the reactor, no request leaves, no response is read and no lease is
renewed, and a page built to be slow would stall the crawl. Documents up to ``INLINE_BYTES`` are
handled on the reactor: a few milliseconds of work, where handing them to a thread and back
costs two thread switches. Where ``scripts/compile.sh`` built the walk over a document
(``_walk.c``), which parses it a chunk at a time and looks at its thread's CPU time between
chunks, one that takes more than ``CRAWLER_EXTRACT_INLINE_SECONDS`` of it there (or has more than
``INLINE_ATTRIBUTES`` attributes on one element, or ``INLINE_ANCHORS`` links, whose cost comes
all at once) is handed to a document thread and handled again there, as larger documents are at
once. lexbor (selectolax) and libxml2 (lxml) release the GIL while they parse.

lexbor's tree building is quadratic in the nesting depth and in the attributes of an element,
so a document nested deeper than ``CRAWLER_MAX_DOM_DEPTH``, or with an element of more than
``CRAWLER_MAX_DOM_ATTRIBUTES`` attributes, is refused before it is parsed. Both are counted from
its tags (the depth from the elements that need an end tag; the attributes of a tag as HTML's
tokenizer reads them there, a quoted value holding ">" included): in C without the GIL
(``_depth.c``), else by regular expressions (``nesting_depth_in_python``,
``most_attributes_in_python``), with the same result (but for a tag cut between two of the
chunks the depth's expression reads). Either reads every ``<`` and a letter as a tag, in a
comment or a script too, where HTML's tokenizer reads none: a page built to hide its tags from
them (an unclosed quote in a comment swallows what follows) passes. The chunks' clock still
bounds what grows with the depth; an element's attributes, read at once, it does not. A document not
handled within ``CRAWLER_EXTRACT_TIMEOUT`` seconds of its thread's CPU time is given up: its row
says so and the crawl goes on. The compiled walk stops there itself, freeing the thread; the
Python walk finishes its parse in the background, off the reactor.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import accumulate
from operator import sub
from typing import Self, TypeVar

from scrapy.settings import BaseSettings

T = TypeVar("T")

_compiled: Callable[[bytes, bytes], tuple[int, int]] | None
try:
    from crawler.extraction._depth import document_shape as _compiled
except ImportError:  # not built: no C compiler where the crawler was installed
    _compiled = None

_TAG = re.compile(rb"<(/?[a-zA-Z][a-zA-Z0-9-]*)")
_SPACE = rb"[ \t\n\f\r]"
_ATTRIBUTE = re.compile(
    rb"[ \t\n\f\r/]*[^ \t\n\f\r/>][^ \t\n\f\r/>=]*"  # its name
    rb"(?:" + _SPACE + rb"*=" + _SPACE + rb"*(?:\"[^\"]*\"?|'[^']*'?|[^ \t\n\f\r>]*))?"  # its value
)
_TAG_END = re.compile(rb"[ \t\n\f\r/]*>?")
_NOT_NESTING = frozenset(
    # void elements, and those whose end tag may be left out (the parser closes them itself)
    b"area base br col embed hr img input keygen link meta param source track wbr "
    b"body caption colgroup dd dt head html li optgroup option p rb rp rt rtc tbody td tfoot th thead tr".split()
)
_NOT_NESTING_WORDS = b" ".join(sorted(_NOT_NESTING))
"""The same names as the compiled module reads them."""
_KNOWN_TAGS = 4096
"""Tag names whose step is remembered: a page of made-up names does not grow the table."""


INLINE_BYTES = 64 * 1024
"""Documents up to this size are handled on the reactor."""
INLINE_ATTRIBUTES = 1000
"""A document with an element of more attributes goes to a thread: lexbor reads an element's
attributes at once, in a time that grows as their square (2 ms for 1,000)."""
INLINE_ANCHORS = 2000
"""A document with more links goes to a thread: each new link costs a URL's normal form, some
30 µs, read at once after the walk."""


class BudgetExceeded(Exception):
    """A document too deep or too slow to handle; the message says which."""


@dataclass(frozen=True, slots=True)
class Budget:
    """What a document's handling may take: ``seconds`` for the walk (0: no limit), and whether
    it is tried on the reactor, and so handed to a thread (``TimeoutError``) past
    ``INLINE_ATTRIBUTES`` or ``INLINE_ANCHORS`` as past its time."""

    seconds: float
    may_hand_over: bool

    @property
    def most_attributes(self) -> int:
        """The most attributes an element may have before the document is handed over (0: any)."""
        return INLINE_ATTRIBUTES if self.may_hand_over else 0

    @property
    def most_anchors(self) -> int:
        """The most links the document may have before it is handed over (0: any)."""
        return INLINE_ANCHORS if self.may_hand_over else 0


class _NestingSteps(dict[bytes, int]):
    """What a tag does to the depth: +1 opens, -1 closes, 0 neither (filled on first sight)."""

    def __missing__(self, tag: bytes) -> int:
        step = 0 if tag.lstrip(b"/").lower() in _NOT_NESTING else (-1 if tag.startswith(b"/") else 1)
        if len(self) < _KNOWN_TAGS:
            self[tag] = step
        return step


_STEPS = _NestingSteps()


WALL_TIMES_TIMEOUT = 10
"""A document whose thread has not spent its timeout of CPU in this many times the timeout on
the wall is given up all the same: a thread that gets no core for so long (blocked, the machine
swapping) would hold its page, and the thread, for ever."""

SHORTEST_WAIT = 0.01
"""The shortest wait before the thread's clock is read again: a thread that has nearly spent
its budget does not wake the reactor over and over for the last of it."""


def _set(future: asyncio.Future[T], value: T) -> None:
    if not future.done():
        future.set_result(value)


_thread_clock: Callable[[int], int] | None = getattr(time, "pthread_getcpuclockid", None)
"""The clock of a thread's CPU time, where the platform has one for any thread to read (not macOS)."""


def _cpu_seconds_from_now() -> Callable[[], float]:
    """The CPU seconds the calling thread spends from now on, readable from any thread (where
    no thread's clock can be read from another, the seconds on the wall). Reading it once the
    thread has ended raises ``OSError``."""
    if _thread_clock is None:
        start = time.monotonic()
        return lambda: time.monotonic() - start
    clock = _thread_clock(threading.get_ident())
    start = time.clock_gettime(clock)
    return lambda: time.clock_gettime(clock) - start


def document_shape(html: bytes) -> tuple[int, int]:
    """How deeply the tags of ``html`` nest its elements (stray end tags do not go below zero),
    and the most attributes a tag has: in C without the GIL where ``scripts/compile.sh`` built
    it, else in Python."""
    if _compiled is not None:
        return _compiled(html, _NOT_NESTING_WORDS)
    return nesting_depth_in_python(html), most_attributes_in_python(html)


def nesting_depth_in_python(html: bytes, chunk: int = 1 << 18) -> int:
    """The depth of ``document_shape``, read ``chunk`` bytes at a time: a regular expression
    holds the GIL while it runs, and the reactor thread gets it back between chunks (a tag cut
    by a chunk's end is not counted).
    """
    deepest = level = lowest = 0
    for start in range(0, len(html), chunk):
        steps = map(_STEPS.__getitem__, _TAG.findall(html, start, start + chunk))
        levels = list(accumulate(steps, initial=level))[1:]
        if not levels:
            continue
        if min(levels) >= lowest:  # as in well-formed HTML: each level's depth is its height above the lowest
            deepest = max(deepest, max(levels) - lowest)
        else:
            lows = list(accumulate(levels, min, initial=lowest))[1:]
            deepest = max(deepest, max(map(sub, levels, lows)))
            lowest = lows[-1]
        level = levels[-1]
    return deepest


def most_attributes_in_python(html: bytes) -> int:
    """The most attributes of ``document_shape``: a tag's attributes are read from just after its
    name to its end, and a "<" inside them starts no attributes of its own (so each byte is read
    once)."""
    most = read_to = 0
    for tag in _TAG.finditer(html):
        if tag.start() < read_to:
            continue
        count, at = 0, tag.end()
        while (attribute := _ATTRIBUTE.match(html, at)) is not None:
            count, at = count + 1, attribute.end()
        most, read_to = max(most, count), _TAG_END.match(html, at).end()  # type: ignore[union-attr]
    return most


class DocumentWorkers:
    """Handles documents within the budgets, on the reactor or in worker threads."""

    def __init__(
        self,
        threads: int,
        timeout: float,
        max_depth: int,
        max_attributes: int = 0,
        inline_seconds: float = 0,
        handed_over: Callable[[], None] | None = None,
    ):
        """``handed_over()`` is called for each document handed to a thread after it was tried
        on the reactor."""
        self.timeout = timeout
        self.max_depth = max_depth
        self.max_attributes = max_attributes
        self.inline_seconds = inline_seconds
        self.handed_over = handed_over
        self._threads = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="documents")

    @classmethod
    def from_settings(cls, settings: BaseSettings, handed_over: Callable[[], None] | None = None) -> Self:
        return cls(
            settings.getint("CRAWLER_EXTRACT_THREADS"),
            settings.getfloat("CRAWLER_EXTRACT_TIMEOUT"),
            settings.getint("CRAWLER_MAX_DOM_DEPTH"),
            settings.getint("CRAWLER_MAX_DOM_ATTRIBUTES"),
            settings.getfloat("CRAWLER_EXTRACT_INLINE_SECONDS"),
            handed_over,
        )

    async def extract(self, work: Callable[[Budget], T], size: int, bounded: bool) -> T:
        """``work(budget)`` on an HTML document of ``size`` bytes: on the reactor if it is
        small, within ``CRAWLER_EXTRACT_INLINE_SECONDS`` where ``bounded`` (``work`` gives up
        within ``budget.seconds`` with ``TimeoutError``, as the compiled walk does) and then in
        a thread if it gave up; larger documents in a thread."""
        if size <= INLINE_BYTES:
            if not (bounded and self.inline_seconds):
                return work(Budget(0, may_hand_over=False))
            try:
                return work(Budget(self.inline_seconds, may_hand_over=True))
            except TimeoutError:  # handled again in a thread, with its whole time
                if self.handed_over is not None:
                    self.handed_over()
        return await self.run(lambda: work(Budget(self.timeout, may_hand_over=False)))

    async def run(self, work: Callable[[], T]) -> T:
        """``work()`` in a worker thread; BudgetExceeded when that takes more than the timeout
        of the thread's CPU time (from its start in the thread, not while it waits for one, and
        not the time other work on the machine takes the core from it), or when ``work`` raises
        ``TimeoutError``."""
        loop = asyncio.get_running_loop()
        started: asyncio.Future[Callable[[], float]] = loop.create_future()

        def timed() -> T:
            loop.call_soon_threadsafe(_set, started, _cpu_seconds_from_now())
            try:
                return work()
            except TimeoutError:  # a walk that gave up at the timeout, freeing the thread
                raise self._spent() from None

        finished = loop.run_in_executor(self._threads, timed)
        try:
            await asyncio.wait([started, finished], return_when=asyncio.FIRST_COMPLETED)
            if self.timeout and started.done():  # not when the threads were shut down meanwhile
                await self._within_budget(finished, started.result())
            return await finished
        finally:
            # Given up (or this wait cancelled): what the thread ends with is nobody's, and is
            # not logged as an exception never retrieved.
            finished.cancel()

    def _spent(self) -> BudgetExceeded:
        """The error of a document whose thread spent the timeout of CPU on it."""
        return BudgetExceeded(f"not handled within {self.timeout:g} s of CPU")

    async def _within_budget(self, finished: asyncio.Future[T], spent: Callable[[], float]) -> None:
        """Wait until ``finished`` or until its thread has spent the timeout of CPU
        (BudgetExceeded); or ``WALL_TIMES_TIMEOUT`` times the timeout on the wall, for a thread
        that does not get to spend it."""
        loop = asyncio.get_running_loop()
        wall_end = loop.time() + WALL_TIMES_TIMEOUT * self.timeout
        while not finished.done():
            try:
                left = self.timeout - spent()
            except OSError:  # the thread has ended, its clock with it: its answer is on its way
                return
            if left <= 0:
                raise self._spent()
            if (wall_left := wall_end - loop.time()) <= 0:
                raise BudgetExceeded(
                    f"not handled within {WALL_TIMES_TIMEOUT * self.timeout:g} s on the wall "
                    f"({self.timeout:g} s of CPU not spent: the thread did not get a core)"
                )
            await asyncio.wait([finished], timeout=max(min(left, wall_left), SHORTEST_WAIT))

    def check_shape(self, html: bytes, budget: Budget | None = None) -> tuple[int, int]:
        """Refuse ``html`` nested deeper than the limit or with an element of more attributes
        (BudgetExceeded), or hand it over where its ``budget`` allows fewer (TimeoutError); its
        depth and most attributes. The Python versions spare themselves documents that cannot
        pass the limits, nor the budget's attributes: 0 stands for what they did not count."""
        most_attributes = budget.most_attributes if budget is not None else 0
        if _compiled is None:
            # Each element that needs an end tag is opened by a "<" that does not start "</",
            # and each attribute takes two bytes. (The compiled reading costs less than these.)
            deep = self.max_depth and html.count(b"<") - html.count(b"</") > self.max_depth
            depth = nesting_depth_in_python(html) if deep else 0
            fewest = min([limit for limit in (self.max_attributes, most_attributes) if limit], default=0)
            attributes = most_attributes_in_python(html) if fewest and len(html) > 2 * fewest else 0
        else:
            depth, attributes = document_shape(html)
        if self.max_depth and depth > self.max_depth:
            raise BudgetExceeded(f"elements nested {depth} deep, more than {self.max_depth}")
        if self.max_attributes and attributes > self.max_attributes:
            raise BudgetExceeded(f"an element with {attributes} attributes, more than {self.max_attributes}")
        if most_attributes and attributes > most_attributes:
            raise TimeoutError(f"an element with {attributes} attributes, more than {most_attributes} to read now")
        return depth, attributes

    def close(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)

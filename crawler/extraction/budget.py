"""Parsing and extraction of documents off the reactor, within a time and a depth budget.

While a large page is parsed on the reactor, no request leaves, no response is read and no
lease is renewed, and a page built to be slow would stall the crawl. Documents larger than
``INLINE_BYTES`` are handled in a small pool of worker threads: lexbor (selectolax) and libxml2
(lxml) release the GIL while they parse, and the Python parts yield it every few milliseconds.

lexbor's tree building is quadratic in the nesting depth, so a document nested deeper than
``CRAWLER_MAX_DOM_DEPTH`` is refused before it is parsed; its depth is counted from its tags
(elements that need an end tag): in C without the GIL (``_depth.c``) where ``scripts/compile.sh``
built it, else by a regular expression (``nesting_depth_in_python``, only for a document with
more start tags than that depth at all), with the same result (but for a tag cut between two of
the chunks the regular expression reads). A document not handled within
``CRAWLER_EXTRACT_TIMEOUT`` seconds is given up: its row says so and the crawl goes on (the
thread finishes its parse in the background, off the reactor).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from itertools import accumulate
from operator import sub
from typing import Self, TypeVar

from scrapy.settings import BaseSettings

T = TypeVar("T")

_compiled: Callable[[bytes, bytes], int] | None
try:
    from crawler.extraction._depth import nesting_depth as _compiled
except ImportError:  # not built: no C compiler where the crawler was installed
    _compiled = None

_TAG = re.compile(rb"<(/?[a-zA-Z][a-zA-Z0-9-]*)")
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
"""Documents up to this size are handled on the reactor: a few milliseconds of work, where
handing them to a thread and back costs two thread switches, slow on a loaded machine."""


class BudgetExceeded(Exception):
    """A document too deep or too slow to handle; the message says which."""


class _NestingSteps(dict[bytes, int]):
    """What a tag does to the depth: +1 opens, -1 closes, 0 neither (filled on first sight)."""

    def __missing__(self, tag: bytes) -> int:
        step = 0 if tag.lstrip(b"/").lower() in _NOT_NESTING else (-1 if tag.startswith(b"/") else 1)
        if len(self) < _KNOWN_TAGS:
            self[tag] = step
        return step


_STEPS = _NestingSteps()


def _set(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def nesting_depth(html: bytes) -> int:
    """How deeply the tags of ``html`` nest its elements (stray end tags do not go below zero):
    in C without the GIL where ``scripts/compile.sh`` built it, else in Python."""
    if _compiled is not None:
        return _compiled(html, _NOT_NESTING_WORDS)
    return nesting_depth_in_python(html)


def nesting_depth_in_python(html: bytes, chunk: int = 1 << 18) -> int:
    """``nesting_depth``, read ``chunk`` bytes at a time: a regular expression holds the GIL
    while it runs, and the reactor thread gets it back between chunks (a tag cut by a chunk's
    end is not counted).
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


class DocumentWorkers:
    """Worker threads running parsers within the budgets."""

    def __init__(self, threads: int, timeout: float, max_depth: int):
        self.timeout = timeout
        self.max_depth = max_depth
        self._threads = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="documents")

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        return cls(
            settings.getint("CRAWLER_EXTRACT_THREADS"),
            settings.getfloat("CRAWLER_EXTRACT_TIMEOUT"),
            settings.getint("CRAWLER_MAX_DOM_DEPTH"),
        )

    async def run(self, work: Callable[[], T], size: int | None = None) -> T:
        """``work()`` on a document of ``size`` bytes: at once if it is small, else (or when its
        size says nothing, as for compressed sitemaps) in a worker thread; BudgetExceeded when
        that runs longer than the timeout (counted from its start in the thread, not while it
        waits for one)."""
        if size is not None and size <= INLINE_BYTES:
            return work()
        loop = asyncio.get_running_loop()
        started: asyncio.Future[None] = loop.create_future()

        def timed() -> T:
            loop.call_soon_threadsafe(_set, started)
            return work()

        finished = loop.run_in_executor(self._threads, timed)
        await asyncio.wait([started, finished], return_when=asyncio.FIRST_COMPLETED)
        try:
            return await asyncio.wait_for(finished, self.timeout or None)
        except TimeoutError:
            raise BudgetExceeded(f"not handled within {self.timeout:g} s") from None

    def check_depth(self, html: bytes) -> None:
        """Refuse ``html`` nested deeper than the limit (called in a worker thread)."""
        if not self.max_depth:
            return
        # Each element that needs an end tag is opened by a "<" that does not start "</": the
        # regular expression is spared the documents that cannot be that deep. The compiled
        # depth costs less than these two counts (it reads each tag once, with memchr).
        if _compiled is None and html.count(b"<") - html.count(b"</") <= self.max_depth:
            return
        if (depth := nesting_depth(html)) > self.max_depth:
            raise BudgetExceeded(f"elements nested {depth} deep, more than {self.max_depth}")

    def close(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)

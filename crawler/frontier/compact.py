"""Scrapy's FIFO memory queue, holding each queued request as bytes.

A queued Scrapy ``Request`` is several objects that the garbage collector tracks (the request,
its meta, its headers and their lists, the parsed URL cached for it), so a large frontier makes
every full collection walk hundreds of thousands of objects, stalling the reactor, and a stall
between a request's slot and its write breaks its domain's spacing. Bytes are not
tracked: a request whose meta and callback arguments are plain data (strings, numbers, booleans,
None, bytes, datetimes, and lists, tuples and dicts of them) and whose callbacks are spider
methods, and whose class is Scrapy's own, is kept as its pickled ``request_to_dict`` and
rebuilt when it leaves the queue; any other request (an object in its meta, a lambda callback,
a subclass whose constructor may want more than its attributes) is kept as it is. Pickle never leaves
the process: the shared frontier in Redis holds JSON only.

``SCHEDULER_MEMORY_QUEUE`` points here.
"""

from __future__ import annotations

import inspect
import pickle
from collections import deque
from datetime import date
from typing import Any, Self

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.utils.request import request_from_dict

_SCALARS = (str, int, float, type(None), bytes, date)  # with bool and datetime
_NESTING = 4


def is_plain(value: Any, depth: int = 0) -> bool:
    """Data whose copy is as good as the original: no object whose identity matters."""
    if isinstance(value, _SCALARS):
        return True
    if depth >= _NESTING:
        return False
    if isinstance(value, (list, tuple)):
        return all(is_plain(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and is_plain(item, depth + 1) for key, item in value.items())
    return False


class _MethodsNamed:
    """The spider's methods among ``methods``, as attributes under the names the spider has them
    by: what ``Request.to_dict`` looks callbacks up in. Given the spider itself, it would walk
    every member of it with ``inspect.getmembers`` for every request."""

    def __init__(self, spider: Spider | None, *methods: Any):
        for method in methods:
            if inspect.ismethod(method) and method.__self__ is spider:
                name = method.__func__.__name__
                found = getattr(spider, name, None)
                if getattr(found, "__func__", None) is method.__func__:
                    setattr(self, name, method)

    def __dir__(self) -> list[str]:
        # All ``inspect.getmembers`` walks: without it, every attribute of ``object`` too.
        return list(vars(self))


class CompactFifoMemoryQueue:
    def __init__(self, spider: Spider | None):
        self.spider = spider
        self._items: deque[bytes | Request] = deque()

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        return cls(crawler.spider)

    def push(self, request: Request) -> None:
        self._items.append(self._compact(request))

    def pop(self) -> Request | None:
        return self._expand(self._items.popleft()) if self._items else None

    def peek(self) -> Request | None:
        return self._expand(self._items[0]) if self._items else None

    def close(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    def _compact(self, request: Request) -> bytes | Request:
        if not (
            type(request).__module__.startswith("scrapy.") and is_plain(request.meta) and is_plain(request.cb_kwargs)
        ):
            return request
        try:
            named = _MethodsNamed(self.spider, request.callback, request.errback)
            return pickle.dumps(request.to_dict(spider=named), protocol=pickle.HIGHEST_PROTOCOL)
        except ValueError:  # a callback that is not a method of the spider
            return request

    def _expand(self, item: bytes | Request) -> Request:
        return item if isinstance(item, Request) else request_from_dict(pickle.loads(item), spider=self.spider)

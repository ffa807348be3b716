"""Requests as compact text for the shared frontier: JSON, never pickle.

A shared Redis must not be a path to code execution, so a request becomes data only: its URL,
the names of its spider callbacks, its priority and the meta values the crawl needs, each of
them plain JSON. The encoded form is ``KEY<TAB>JSON``: the key is the URL the request's row
will carry (the first URL of a redirect chain), which the frontier uses as the lease id; the
URL itself is written only when it differs from the key. Defaults are left out and a referrer
on the same site is written as a path, so a typical request costs little more than its URL.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from scrapy import Request, Spider

SEPARATOR = "\t"

_SHORT = {"depth": "d", "discovered_via": "v", "referrer": "r", "not_before": "n", "retry_times": "t"}
_LONG = {short: long for long, short in _SHORT.items()}


class UnserializableRequest(ValueError):
    """A request that cannot be shared as plain data (an object in its meta, a lambda callback)."""


class RequestCodec:
    def __init__(self, spider: Spider, meta_keys: Iterable[str], local_keys: Iterable[str] = ()):
        """``meta_keys``: the meta kept (``CRAWLER_REDIS_META_KEYS``), Scrapy's transient keys
        (download slot, latency …) are dropped; a request with any of ``local_keys`` holds an
        object and cannot be shared."""
        self.spider = spider
        self.meta_keys = tuple(meta_keys)
        self.local_keys = frozenset(local_keys)
        # The spider's usual pair is left out of every request that uses it.
        self.callback, self.errback = getattr(spider, "default_callbacks", (None, None))

    def encode(self, request: Request, key: str) -> str:
        if not self.local_keys.isdisjoint(request.meta):
            raise UnserializableRequest(f"{request.url}: meta holds objects of this process")
        data: dict[str, Any] = {}
        if request.url != key:
            data["u"] = request.url
        for field, function, default in (("c", request.callback, self.callback), ("e", request.errback, self.errback)):
            name = None if function is None else self._method_name(function, request)
            if name != default:
                data[field] = name
        if request.priority:
            data["p"] = request.priority
        if request.dont_filter:
            data["f"] = 1
        if request.method != "GET":
            data["M"] = request.method
        if request.body:
            data["b"] = request.body.decode("latin-1")
        if request.headers:
            data["h"] = {k.decode("latin-1"): [v.decode("latin-1") for v in vs] for k, vs in request.headers.items()}
        meta = {}
        for name in self.meta_keys:
            value = request.meta.get(name)
            if value is None or value is False:
                continue
            if name == "referrer":
                value = _relative_to(value, request.url)
            elif isinstance(value, datetime):
                value = value.isoformat()
            meta[_SHORT.get(name, name)] = value
        if meta:
            data["m"] = meta
        try:
            text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise UnserializableRequest(f"{request.url}: meta is not plain JSON ({exc})") from exc
        if SEPARATOR in key:
            raise UnserializableRequest(f"{key!r}: a tab in the URL")
        return f"{key}{SEPARATOR}{text}"

    def decode(self, encoded: str) -> tuple[str, Request]:
        """The lease key and the request."""
        key, _, text = encoded.partition(SEPARATOR)
        data = json.loads(text)
        url = data.get("u", key)
        meta = {_LONG.get(name, name): value for name, value in data.get("m", {}).items()}
        if "referrer" in meta:
            meta["referrer"] = _absolute(meta["referrer"], url)
        if "sitemap_lastmod" in meta:
            meta["sitemap_lastmod"] = datetime.fromisoformat(meta["sitemap_lastmod"])
        headers = data.get("h")
        request = Request(
            url,
            callback=self._method(data.get("c", self.callback)),
            errback=self._method(data.get("e", self.errback)),
            priority=data.get("p", 0),
            dont_filter=bool(data.get("f")),
            method=data.get("M", "GET"),
            body=data["b"].encode("latin-1") if "b" in data else None,
            headers=headers,
            meta=meta,
        )
        return key, request

    def _method_name(self, function: Any, request: Request) -> str:
        name = getattr(function, "__name__", None)
        if name is None or getattr(self.spider, name, None) != function:
            raise UnserializableRequest(f"{request.url}: callback {function!r} is not a method of the spider")
        return name

    def _method(self, name: str | None) -> Any:
        if name is None:
            return None
        method = getattr(self.spider, name, None) if not name.startswith("_") else None
        if not inspect.ismethod(method):
            raise UnserializableRequest(f"{name!r} is not a method of spider {self.spider.name}")
        return method


def _origin(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.split('/', 1)[0]}" if sep else ""


def _relative_to(referrer: str, url: str) -> str:
    origin = _origin(url)
    if origin and referrer.startswith(origin + "/"):
        return referrer[len(origin) :]
    return referrer


def _absolute(referrer: str, url: str) -> str:
    return _origin(url) + referrer if referrer.startswith("/") else referrer

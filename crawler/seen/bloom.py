"""The Bloom seen filter (``CRAWLER_SEEN_FILTER = "bloom"``): a fixed size for
``CRAWLER_BLOOM_CAPACITY`` requests at ``CRAWLER_BLOOM_ERROR_RATE``, paid for with false
positives: a request wrongly taken as seen is never crawled. RedisBloom's ``BF.ADD`` keeps it where
the server has the module; elsewhere its bits are strings set by ``SETBIT``, in blocks of at most
16 MiB, one block a request (``bloom_shape.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import redis
from scrapy import Request

from crawler.seen.bloom_shape import BloomShape
from crawler.seen.filter import MarkedSeenFilter, SeenMarker


class BloomSeenFilter(MarkedSeenFilter):
    def __init__(
        self,
        server: redis.Redis,
        key: str,
        fingerprinter: Any,
        shape: BloomShape,
        *,
        use_module: bool,
        debug: bool = False,
        place: Callable[[Request], str] | None = None,
        places: Sequence[str] = (),
    ):
        """``place`` and ``places``: where a request's marks lie and every such key (a filter
        of ``shape`` each), if not under ``key``."""
        super().__init__(server, key, fingerprinter, debug, place)
        self.shape = shape
        self.use_module = use_module
        if use_module:
            for filter_key in places or [key]:
                self._reserve(filter_key)

    def _reserve(self, key: str) -> None:
        try:
            self.server.execute_command("BF.RESERVE", key, self.shape.error_rate, self.shape.capacity, "NONSCALING")
        except redis.ResponseError as exc:
            if "exists" not in str(exc).lower():  # another process of the crawl reserved it
                raise

    def marker_of(self, fingerprint: bytes, key: str | None = None) -> SeenMarker:
        if self.use_module:
            return ("bf", key or self.key, fingerprint.hex())
        block, offsets = self.shape.positions(fingerprint)
        return ("bits", f"{key or self.key}:{block}", *map(str, offsets))

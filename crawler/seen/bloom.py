"""The Bloom seen filter (``CRAWLER_SEEN_FILTER = "bloom"``): a fixed size for
``CRAWLER_BLOOM_CAPACITY`` requests at ``CRAWLER_BLOOM_ERROR_RATE``, paid for with false
positives: a request wrongly taken as seen is never crawled. RedisBloom's ``BF.ADD`` keeps it where
the server has the module; elsewhere its bits are strings set by ``SETBIT``, in blocks of at most
16 MiB, one block a request (``bloom_shape.py``).
"""

from __future__ import annotations

from typing import Any

import redis

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
    ):
        super().__init__(server, key, fingerprinter, debug)
        self.shape = shape
        self.use_module = use_module
        if use_module:
            self._reserve()

    def _reserve(self) -> None:
        try:
            self.server.execute_command(
                "BF.RESERVE", self.key, self.shape.error_rate, self.shape.capacity, "NONSCALING"
            )
        except redis.ResponseError as exc:
            if "exists" not in str(exc).lower():  # another process of the crawl reserved it
                raise

    def marker_of(self, fingerprint: bytes) -> SeenMarker:
        if self.use_module:
            return ("bf", self.key, fingerprint.hex())
        block, offsets = self.shape.positions(fingerprint)
        return ("bits", f"{self.key}:{block}", *map(str, offsets))

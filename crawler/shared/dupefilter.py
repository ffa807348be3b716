"""The crawl's seen-request filter in Redis, in little memory.

scrapy-redis's ``RFPDupeFilter`` keeps one 40-character hex fingerprint per request in a set
(about 100 bytes each). Here the first 8 bytes of Scrapy's request fingerprint are a 64-bit
integer in one of 16,384 small sets, which Redis stores as packed integer arrays: 8 bytes a
request while a set holds at most ``set-max-intset-entries`` (512 by default, so about 8
million requests). The frontier marks a request seen in the same step that queues it
(``marker``), so a process killed between the two cannot lose it. A false "seen" needs two requests with the same 64 bits: at a billion
requests, about 3 in 100,000 crawls.
"""

from __future__ import annotations

from typing import Any, Protocol

import redis
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy_redis.dupefilter import RFPDupeFilter

from crawler.shared.store import delete_matching

BUCKETS = 16_384


class SharedSeenFilter(Protocol):
    """What the shared frontier needs of a seen filter. The frontier script tests and marks a
    request in the step that queues it, with ``SADD`` of the marker's value into the marker's
    key (0: seen); a filter marked otherwise (bits of a Bloom filter) adds its own branch to
    the script's ``push``."""

    def marker(self, request: Request) -> tuple[str, int]: ...

    def log(self, request: Request, spider: Spider) -> None: ...

    def clear(self) -> None: ...


def seen_filter(crawler: Crawler, client: redis.Redis, key: str, fingerprinter: Any) -> SharedSeenFilter:
    """The crawl's seen filter."""
    return SeenFilter(client, key, fingerprinter, crawler.settings.getbool("DUPEFILTER_DEBUG"))


class SeenFilter(RFPDupeFilter):
    def __init__(self, server: redis.Redis, key: str, fingerprinter: Any, debug: bool = False):
        super().__init__(server, key, debug)
        self.fingerprinter = fingerprinter

    def marker(self, request: Request) -> tuple[str, int]:
        """The set and the value that mark ``request`` seen."""
        return self.marker_of(self.fingerprinter.fingerprint(request))

    def marker_of(self, fingerprint: bytes) -> tuple[str, int]:
        value = int.from_bytes(fingerprint[:8], "big", signed=True)
        bucket = int.from_bytes(fingerprint[8:10], "big") % BUCKETS
        return f"{self.key}:{bucket}", value

    def request_seen(self, request: Request) -> bool:
        key, value = self.marker(request)
        return self.server.sadd(key, value) == 0

    def clear(self) -> None:
        delete_matching(self.server, f"{self.key}:*")


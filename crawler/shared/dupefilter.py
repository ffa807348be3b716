"""The crawl's seen-request filters in Redis, marked in the step that queues a request.

Every filter names a request by a marker: its kind, its key and its values, which ``seen.lua``
(shared by the frontier script and the filters' own script) tests and sets in one step, so a
process killed between marking and queuing cannot lose a request.

- ``exact`` (the default): the first 8 bytes of Scrapy's request fingerprint are a 64-bit
  integer in one of 16,384 small sets, which Redis stores as packed integer arrays: 8 bytes a
  request while a set holds at most ``set-max-intset-entries`` (512 by default, so about 8
  million requests), where scrapy-redis's ``RFPDupeFilter`` keeps a 40-character hex
  fingerprint (about 100 bytes). A false "seen" needs two requests with the same 64 bits: at a
  billion requests, about 3 in 100,000 crawls.
- ``bloom``: a Bloom filter of fixed size for ``CRAWLER_BLOOM_CAPACITY`` requests at
  ``CRAWLER_BLOOM_ERROR_RATE`` (28.8 bits a request at one in a million), paid for with false
  positives: a request wrongly taken as seen is never crawled. RedisBloom's ``BF.ADD`` keeps it
  where the server has the module; elsewhere its bits are strings set by ``SETBIT``, in blocks
  of at most 16 MiB, one block a request (``bloom.py``).
"""

from __future__ import annotations

from typing import Any

import redis
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy_redis.dupefilter import RFPDupeFilter

from crawler.shared.bloom import BloomShape
from crawler.shared.store import MARK_SEEN, delete_matching

BUCKETS = 16_384

SeenMarker = tuple[str, ...]
"""Kind, key and values of a request in its seen filter (``seen.lua``)."""

_MARK_ONE = MARK_SEEN + "\nreturn mark_seen(ARGV[1], KEYS[1], {unpack(ARGV, 2)}) and 1 or 0\n"
_CHECK_ONE = MARK_SEEN + "\nreturn is_seen(ARGV[1], KEYS[1], {unpack(ARGV, 2)}) and 1 or 0\n"


def seen_filter(crawler: Crawler, client: redis.Redis, key: str, fingerprinter: Any) -> MarkedSeenFilter:
    """The crawl's seen filter, as ``CRAWLER_SEEN_FILTER`` says."""
    settings = crawler.settings
    debug = settings.getbool("DUPEFILTER_DEBUG")
    kind = settings.get("CRAWLER_SEEN_FILTER")
    if kind == "exact":
        return SeenFilter(client, key, fingerprinter, debug)
    if kind == "bloom":
        shape = BloomShape.for_capacity(settings.getint("CRAWLER_BLOOM_CAPACITY"), settings.getfloat("CRAWLER_BLOOM_ERROR_RATE"))
        return BloomSeenFilter(client, key, fingerprinter, shape, use_module=has_bloom_module(client), debug=debug)
    raise ValueError(f"CRAWLER_SEEN_FILTER must be 'exact' or 'bloom', not {kind!r}")


def has_bloom_module(server: redis.Redis) -> bool:
    """Whether the server has RedisBloom (``MODULE LIST`` may be refused on managed servers)."""
    try:
        modules = server.execute_command("MODULE", "LIST")
    except redis.ResponseError:
        return False
    return any(_module_name(module) == "bf" for module in modules)


def _module_name(module: Any) -> str:
    if isinstance(module, dict):
        name = module.get(b"name", module.get("name", b""))
    else:  # RESP2: a flat list of name, value pairs
        name = dict(zip(module[::2], module[1::2])).get(b"name", b"")
    return name.decode() if isinstance(name, bytes) else str(name)


class MarkedSeenFilter(RFPDupeFilter):
    """A seen filter whose requests are marked by ``seen.lua``."""

    def __init__(self, server: redis.Redis, key: str, fingerprinter: Any, debug: bool = False):
        super().__init__(server, key, debug)
        self.fingerprinter = fingerprinter
        self._mark = server.register_script(_MARK_ONE)
        self._check = server.register_script(_CHECK_ONE)

    def marker(self, request: Request) -> SeenMarker:
        return self.marker_of(self.fingerprinter.fingerprint(request))

    def marker_of(self, fingerprint: bytes) -> SeenMarker:
        raise NotImplementedError

    def mark(self, marker: SeenMarker, client: Any = None) -> Any:
        """Mark a request seen (with a pipeline as ``client``, queue it there): 1 when it was
        not seen before."""
        kind, key, *values = marker
        return self._mark(keys=[key], args=[kind, *values], client=client)

    def request_seen(self, request: Request) -> bool:
        return self.mark(self.marker(request)) == 0

    def contains(self, request: Request, client: Any = None) -> Any:
        """Whether ``request`` counts as seen (1), without marking it."""
        kind, key, *values = self.marker(request)
        return self._check(keys=[key], args=[kind, *values], client=client)

    def clear(self) -> None:
        self.server.delete(self.key)
        delete_matching(self.server, f"{self.key}:*")


class SeenFilter(MarkedSeenFilter):
    def marker_of(self, fingerprint: bytes) -> SeenMarker:
        value = int.from_bytes(fingerprint[:8], "big", signed=True)
        bucket = int.from_bytes(fingerprint[8:10], "big") % BUCKETS
        return ("set", f"{self.key}:{bucket}", str(value))


class BloomSeenFilter(MarkedSeenFilter):
    def __init__(
        self, server: redis.Redis, key: str, fingerprinter: Any, shape: BloomShape, *, use_module: bool, debug: bool = False
    ):
        super().__init__(server, key, fingerprinter, debug)
        self.shape = shape
        self.use_module = use_module
        if use_module:
            self._reserve()

    def _reserve(self) -> None:
        try:
            self.server.execute_command("BF.RESERVE", self.key, self.shape.error_rate, self.shape.capacity, "NONSCALING")
        except redis.ResponseError as exc:
            if "exists" not in str(exc).lower():  # another process of the crawl reserved it
                raise

    def marker_of(self, fingerprint: bytes) -> SeenMarker:
        if self.use_module:
            return ("bf", self.key, fingerprint.hex())
        block, offsets = self.shape.positions(fingerprint)
        return ("bits", f"{self.key}:{block}", *map(str, offsets))

"""The Bloom seen filter in Redis (``CRAWLER_SEEN_FILTER = "bloom"``).

A fixed memory for a configured capacity (about 3.6 bytes a request at one false positive in a
million, against 8 for the exact filter), paid for with false positives: a request the filter
wrongly takes as seen is never crawled. Where the server has the RedisBloom module, its
``BF.ADD`` keeps the filter; elsewhere the bits are plain strings set by ``SETBIT`` in a script
(``seen.lua``), which the frontier script shares so that marking and queuing stay one step.
"""

from __future__ import annotations

import logging
from importlib.resources import files
from typing import Any

import redis
from scrapy import Request
from scrapy_redis.dupefilter import RFPDupeFilter

from crawler.shared.bloom import BloomShape
from crawler.shared.store import delete_matching

logger = logging.getLogger(__name__)

MARK_SEEN = files("crawler.shared").joinpath("seen.lua").read_text(encoding="utf-8")
_MARK_ONE = MARK_SEEN + "\nreturn mark_seen(ARGV[1], KEYS[1], {unpack(ARGV, 2)}) and 1 or 0\n"
_CHECK_ONE = MARK_SEEN + "\nreturn is_seen(ARGV[1], KEYS[1], {unpack(ARGV, 2)}) and 1 or 0\n"


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


class BloomSeenFilter(RFPDupeFilter):
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
        super().__init__(server, key, debug)
        self.fingerprinter = fingerprinter
        self.shape = shape
        self.use_module = use_module
        self._mark = server.register_script(_MARK_ONE)
        self._check = server.register_script(_CHECK_ONE)
        if use_module:
            self._reserve()

    def _reserve(self) -> None:
        try:
            self.server.execute_command(
                "BF.RESERVE", self.key, self.shape.error_rate, self.shape.capacity, "NONSCALING"
            )
        except redis.ResponseError as exc:
            if "exists" not in str(exc).lower():
                raise

    def marker(self, request: Request) -> tuple[str, ...]:
        """The seen-filter kind, key and values that mark ``request`` seen (``seen.lua``)."""
        return self.marker_of(self.fingerprinter.fingerprint(request))

    def marker_of(self, fingerprint: bytes) -> tuple[str, ...]:
        if self.use_module:
            return ("bf", self.key, fingerprint.hex())
        block, offsets = self.shape.positions(fingerprint)
        return ("bits", f"{self.key}:{block}", *map(str, offsets))

    def request_seen(self, request: Request) -> bool:
        kind, key, *values = self.marker(request)
        return self._mark(keys=[key], args=[kind, *values]) == 0

    def contains(self, request: Request) -> bool:
        """Whether ``request`` counts as seen, without marking it."""
        kind, key, *values = self.marker(request)
        return self._check(keys=[key], args=[kind, *values]) == 1

    def clear(self) -> None:
        self.server.delete(self.key)
        delete_matching(self.server, f"{self.key}:*")

"""The seen filters' common part: a request is named by a marker (its kind, its key and its
values), which ``seen.lua`` (shared by the frontier script and the filters' own) tests and sets
in one step, so a process killed between marking and queuing cannot lose a request. Built on
scrapy-redis's ``RFPDupeFilter``, with Scrapy's request fingerprinter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis
from scrapy import Request
from scrapy_redis.dupefilter import RFPDupeFilter

from crawler.redis.keys import delete_matching
from crawler.redis.scripts import call_script, register_script
from crawler.redis.store import MARK_SEEN

SeenMarker = tuple[str, ...]
"""Kind, key and values of a request in its seen filter (``seen.lua``)."""

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


class MarkedSeenFilter(RFPDupeFilter):
    """A seen filter whose requests are marked by ``seen.lua``."""

    def __init__(
        self,
        server: redis.Redis,
        key: str,
        fingerprinter: Any,
        debug: bool = False,
        place: Callable[[Request], str] | None = None,
    ):
        super().__init__(server, key, debug)
        self.fingerprinter = fingerprinter
        self.place = place or (lambda _: key)
        """The key under which a request's marks lie: in a shared crawl, the ``seen`` of its
        domain's shard of the frontier, so that queuing it and marking it seen stay one atomic
        step in one slot of a cluster."""
        self._mark = register_script(server, _MARK_ONE)
        self._check = register_script(server, _CHECK_ONE)

    def marker(self, request: Request) -> SeenMarker:
        return self.marker_of(self.fingerprinter.fingerprint(request), self.place(request))

    def marker_of(self, fingerprint: bytes, key: str | None = None) -> SeenMarker:
        """The marker of a fingerprint under ``key`` (the filter's own if None)."""
        raise NotImplementedError

    def mark(self, marker: SeenMarker, client: Any = None) -> Any:
        """Mark a request seen (with a pipeline as ``client``, queue it there): 1 when it was
        not seen before."""
        kind, key, *values = marker
        return call_script(self._mark, [key], [kind, *values], client)

    def request_seen(self, request: Request) -> bool:
        return self.mark(self.marker(request)) == 0

    def contains(self, request: Request, client: Any = None) -> Any:
        """Whether ``request`` counts as seen (1), without marking it."""
        kind, key, *values = self.marker(request)
        return call_script(self._check, [key], [kind, *values], client)

    def clear(self) -> None:
        self.server.delete(self.key)
        delete_matching(self.server, f"{self.key}:*")

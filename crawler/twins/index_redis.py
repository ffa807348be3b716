"""Each site's fingerprints in Redis, for every process of a shared crawl: looked up and kept
by one script (``index.lua``), through the crawl's link (never on the reactor)."""

from __future__ import annotations

from importlib.resources import files

from crawler.redis.keys import as_text
from crawler.redis.link import RedisLink
from crawler.redis.scripts import call_script, register_script
from crawler.twins.index_local import Twin
from crawler.twins.simhash import as_hex, blocks

SCRIPT = files("crawler.twins").joinpath("index.lua").read_text(encoding="utf-8")


class RedisTwinIndex:
    """As ``TwinIndex``, shared; a site's hash holds about 250 bytes a fingerprint (its URL
    included), at most ``capacity`` fingerprints."""

    def __init__(self, link: RedisLink, key_prefix: str, max_distance: int, capacity: int):
        self.link = link
        self.key_prefix = key_prefix
        self.max_distance = max_distance
        self.capacity = capacity
        self.script = register_script(link.client, SCRIPT)

    async def find_or_add(self, site: str, fingerprint: int, url: str) -> Twin | None:
        fields = [f"{key:x}" for key in blocks(fingerprint, self.max_distance + 1)]
        args = [url, as_hex(fingerprint), self.max_distance, self.capacity, *fields]
        key = f"{self.key_prefix}:{site}"
        result = await self.link.answer(lambda pipe: call_script(self.script, [key], args, pipe))
        # None: the script failed and was dropped (logged by the link): no twin is better than a wrong one
        if not result or int(result[0]) < 0:
            return None
        return Twin(as_text(result[1]), int(result[0]))

"""``TokenBuckets`` shared by the processes of a crawl: one script (``rate.lua``) per page,
through the crawl's link (never on the reactor)."""

from __future__ import annotations

from importlib.resources import files

from crawler.redis.link import RedisLink
from crawler.redis.scripts import call_script, register_script

SCRIPT = files("crawler.ingestion").joinpath("rate.lua").read_text(encoding="utf-8")


class RedisTokenBuckets:
    def __init__(self, link: RedisLink, key_prefix: str, rate: float, burst: int):
        self.link = link
        self.key_prefix = key_prefix
        self.rate = rate
        self.burst = burst
        self.script = register_script(link.client, SCRIPT)

    async def take(self, site: str, wanted: int) -> int:
        """How many of ``wanted`` new URLs the pages of ``site`` may add now, counted for every
        process; through an outage the page waits, as the crawl does. A script that failed (logged
        by the link) holds nothing back."""
        keys, args = [f"{self.key_prefix}:{site}"], [self.rate, self.burst, wanted]
        granted = await self.link.answer(lambda pipe: call_script(self.script, keys, args, pipe))
        return wanted if granted is None else int(granted)

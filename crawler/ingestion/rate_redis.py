"""``TokenBuckets`` shared by the processes of a crawl: one script (``rate.lua``) per page,
through the crawl's link (never on the reactor)."""

from __future__ import annotations

from importlib.resources import files

from crawler.redis.link import RedisLink

SCRIPT = files("crawler.ingestion").joinpath("rate.lua").read_text(encoding="utf-8")


class RedisTokenBuckets:
    def __init__(self, link: RedisLink, key_prefix: str, rate: float, burst: int):
        self.link = link
        self.key_prefix = key_prefix
        self.rate = rate
        self.burst = burst
        self.script = link.client.register_script(SCRIPT)

    async def take(self, site: str, wanted: int) -> int:
        """How many of ``wanted`` new URLs the pages of ``site`` may add now, counted for every
        process."""
        keys, args = [f"{self.key_prefix}:{site}"], [self.rate, self.burst, wanted]
        return int(await self.link.run(lambda client: self.script(keys=keys, args=args, client=client)))

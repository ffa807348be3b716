"""The shared crawls' frontiers in Redis, read with the crawl's own frontier helpers, for the API
and ``scrapy frontier``. Those are synchronous: the API runs every call in a worker thread
(``asyncio.to_thread``), never on the event loop."""

from __future__ import annotations

from typing import Any

from scrapy.settings import BaseSettings

from crawler.politeness.config import frontier_config
from crawler.redis.connection import redis_client
from crawler.redis.keys import crawl_prefix, crawls_in
from crawler.redis.shards import recorded_count
from crawler.redis.store import FrontierStore


class FrontierView:
    def __init__(self, settings: BaseSettings):
        self.settings = settings
        self.client = redis_client(settings)
        self.config = frontier_config(settings)

    def close(self) -> None:
        self.client.close()

    def crawls(self) -> list[str]:
        return crawls_in(self.client, self.settings)

    def frontier(self, crawl: str) -> FrontierStore:
        prefix = crawl_prefix(self.settings, crawl)
        shards = recorded_count(self.client, f"{prefix}:shards", self.settings.getint("CRAWLER_REDIS_SHARDS"))
        return FrontierStore(self.client, prefix, self.config, shards=shards)

    def sizes(self) -> list[dict[str, Any]]:
        rows = []
        for crawl in self.crawls():
            sizes = self.frontier(crawl).sizes()
            rows.append(
                {
                    "crawl": crawl,
                    "queued": sizes.queued,
                    "delayed": sizes.delayed,
                    "spilled": sizes.spilled,
                    "leased": sizes.leased,
                    "reclaimed": sizes.reclaimed,
                }
            )
        return rows

    def expired_leases(self, now: float) -> int:
        """Leases past their time, which the frontier hands out again on its next pop."""
        return sum(
            self.client.zcount(f"{shard}:leases", "-inf", now)
            for crawl in self.crawls()
            for shard in self.frontier(crawl).shards
        )

    def urls(self, offset: int, limit: int, only: str | None = None) -> tuple[list[dict[str, Any]], bool, int]:
        """Queued URLs, crawl by crawl (or of the crawl ``only``), domain by domain, priority
        first; whether more follow; and how much of ``offset`` is left past the last one (where
        the requests spilled to the database take over)."""
        found: list[dict[str, Any]] = []
        skip = offset
        for crawl in self.crawls() if only is None else [only]:
            frontier = self.frontier(crawl)
            for domain in frontier.domain_names():
                for priority in self.client.zrange(frontier.domain_part(domain, "qp", domain), 0, -1):
                    queue = frontier.domain_part(domain, "q", domain, priority.decode())
                    length = self.client.llen(queue)
                    if skip >= length:
                        skip -= length
                        continue
                    for entry in self.client.lrange(queue, skip, skip + limit - len(found)):
                        found.append(
                            {
                                "crawl": crawl,
                                "domain": domain,
                                "priority": int(float(priority)),
                                "url": entry.decode().split("\t", 1)[0],
                            }
                        )
                    skip = 0
                    if len(found) > limit:
                        return found[:limit], True, 0
        return found, False, skip

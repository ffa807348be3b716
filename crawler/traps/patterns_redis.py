"""The counts of ``patterns_local`` shared by the processes of a crawl: each process counts in
its own copy at once and adds to the shared counts in Redis (``HINCRBY``, through the link);
every answer (one script: the increment, then the pattern's three counts) brings the copy up to
what all processes counted. The rules read the copy, so a
process sees the others' counts as of its last answer: a few URLs more may pass, none is lost."""

from __future__ import annotations

from typing import Any

from crawler.redis.link import Op, RedisLink
from crawler.redis.scripts import call_script, register_script
from crawler.traps.patterns_local import PatternCount, PatternCounts

_FIELDS = {"queued": "q", "pages": "p", "twins": "t"}
_COUNT = """
redis.call("HINCRBY", KEYS[1], ARGV[1] .. ":" .. ARGV[2], 1)
return redis.call("HMGET", KEYS[1], "q:" .. ARGV[2], "p:" .. ARGV[2], "t:" .. ARGV[2])
"""


class RedisPatternCounts(PatternCounts):
    def __init__(self, max_urls: int, stop_after_twins: int, link: RedisLink, key_prefix: str):
        super().__init__(max_urls, stop_after_twins)
        self.link = link
        self.key_prefix = key_prefix
        self.script = register_script(link.client, _COUNT)

    def queued(self, site: str, pattern: str) -> None:
        super().queued(site, pattern)
        self._share(site, pattern, "queued")

    def judged(self, site: str, pattern: str, twin: bool) -> None:
        super().judged(site, pattern, twin)
        self._share(site, pattern, "twins" if twin else "pages")

    def _share(self, site: str, pattern: str, what: str) -> None:
        count = self._count(site, pattern)
        key, args = f"{self.key_prefix}:{site}", [_FIELDS[what], pattern]

        def shared(totals: Any) -> None:
            if totals is not None:
                _raise(count, [int(total or 0) for total in totals])

        self.link.submit(Op(send=lambda pipe: call_script(self.script, [key], args, pipe), done=shared))


def _raise(count: PatternCount, totals: list[int]) -> None:
    """What every process counted, where it is more than this process knows."""
    count.queued = max(count.queued, totals[0])
    count.pages = max(count.pages, totals[1])
    count.twins = max(count.twins, totals[2])

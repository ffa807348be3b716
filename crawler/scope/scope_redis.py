"""The crawl's scope shared through Redis: a seed pushed to any process (or by ``scrapy seed``)
widens the scope of every process.

Answered from this process's copies of the shared sets (every seed's site, and the trusted
seeds' sites), each brought up to date whenever it has grown (``refresh``, asked by the shared
frontier each time it pops requests: what they link to is judged with the scope as it was when
they were handed out, or newer)."""

from __future__ import annotations

from typing import Any

from crawler.redis.keys import as_text
from crawler.redis.link import Op, RedisLink
from crawler.scope.scope_local import Scope


class RedisScope(Scope):
    def __init__(self, mode: str, link: RedisLink, key: str):
        super().__init__(mode)
        self.seeds = _SharedSet(link, key, self._allowed)
        self.trusted_seeds = _SharedSet(link, f"{key}:trusted", self._trusted)

    def add_seed(self, url: str, trusted: bool = True) -> None:
        super().add_seed(url, trusted)
        self.seeds.add(self._key(url))
        if trusted:
            self.trusted_seeds.add(self._key(url))

    def refresh(self) -> None:
        self.seeds.refresh()
        self.trusted_seeds.refresh()


class _SharedSet:
    """A Redis set mirrored into a set of this process's, loaded again when it has grown."""

    def __init__(self, link: RedisLink, key: str, local: set[str]):
        self.link = link
        self.key = key
        self.local = local
        self._shared_size = 0
        self._asking = False

    def add(self, member: str) -> None:
        self.local.add(member)
        self.link.submit(Op(send=lambda pipe: pipe.sadd(self.key, member)))

    def refresh(self) -> None:
        if self._asking:
            return
        self._asking = True
        self.link.submit(Op(send=lambda pipe: pipe.scard(self.key), done=self._counted))

    def _counted(self, size: Any) -> None:
        if not size or size == self._shared_size:
            self._asking = False
            return
        self.link.submit(Op(send=lambda pipe: pipe.smembers(self.key), done=self._loaded))

    def _loaded(self, members: Any) -> None:
        self._asking = False
        if members:
            self._shared_size = len(members)
            self.local.update(map(as_text, members))

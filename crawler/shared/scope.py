"""The crawl's scope shared through Redis: a seed pushed to any process (or by ``scrapy seed``)
widens the scope of every process."""

from __future__ import annotations

import time
from collections.abc import Callable

import redis

from crawler.frontier.scope import Scope
from crawler.shared.connection import REDIS_ERRORS

RECHECK_SECONDS = 5.0
"""How long a key found out of scope is believed before Redis is asked again."""


class SharedScope(Scope):
    def __init__(self, mode: str, client: redis.Redis, key: str, clock: Callable[[], float] = time.monotonic):
        super().__init__(mode)
        self.client = client
        self.key = key
        self.clock = clock
        self._outside: dict[str, float] = {}

    def add_seed(self, url: str) -> None:
        super().add_seed(url)
        self.client.sadd(self.key, self._key(url))  # at start, or by ``scrapy seed``: Redis must answer

    def seeded(self, url: str) -> bool:
        if super().seeded(url):
            return True
        key = self._key(url)
        checked = self._outside.get(key)
        now = self.clock()
        if checked is not None and now - checked < RECHECK_SECONDS:
            return False
        try:
            shared = self.client.sismember(self.key, key)
        except REDIS_ERRORS:
            return False  # this process's own seeds decide until Redis is back
        if shared:
            self._allowed.add(key)
            return True
        self._outside[key] = now
        return False

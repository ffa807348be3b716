"""Wake the engine at a given time, so that it asks the frontier again when a domain becomes
ready; Scrapy's engine otherwise asks only every 5 s."""

from __future__ import annotations

from typing import Any

from scrapy.crawler import Crawler

from crawler.compat import schedule_engine


class EngineWakeup:
    def __init__(self, crawler: Crawler):
        self.crawler = crawler
        self._call: Any = None  # twisted's DelayedCall

    def at(self, delay: float) -> None:
        """Wake the engine in ``delay`` seconds, unless a wake-up is due sooner."""
        # Our own timer, not the engine's CallLaterOnce with a delay: a pending delayed call
        # there would swallow the engine's own immediate schedule() calls until it fires.
        from twisted.internet import reactor  # the one Scrapy installed, imported when it is

        delay = max(0.0, delay)
        if self._call is not None and self._call.active():
            if self._call.getTime() <= reactor.seconds() + delay:
                return
            self._call.cancel()
        self._call = reactor.callLater(delay, schedule_engine, self.crawler)

    def cancel(self) -> None:
        if self._call is not None and self._call.active():
            self._call.cancel()

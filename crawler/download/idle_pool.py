"""A connection pool that keeps at most ``CRAWLER_MAX_IDLE_CONNECTIONS`` idle connections in all
(one pool for each scheme's handler, ``http`` and ``https``).

Twisted's pool keeps up to ``maxPersistentPerHost`` idle connections for every host it has
talked to, each for ``cachedConnectionTimeout`` (240 s) or until the server closes it. A crawl
of many hosts talks to most of them a few times (robots.txt, a page or two) and then not for a
long while: a crawl of 10,000 hosts held 600 to 900 sockets open against servers that close
after 15 s, and would hold thousands against the common 60 to 75 s, past the 1,024 files a
process may open by default. Past the bound, the connection idle the longest is closed first:
a host asked again soon keeps its connection, one done with gives its socket back.
"""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

from twisted.web.client import HTTPConnectionPool


class IdleBoundedPool(HTTPConnectionPool):
    max_idle = 0
    """Idle connections kept in all (0: no bound but Twisted's own)."""

    def __init__(self, reactor: Any, persistent: bool = True):
        super().__init__(reactor, persistent)
        self._keys: WeakKeyDictionary[Any, Any] = WeakKeyDictionary()
        """The pool key of each connection put back (Twisted's pool keeps them by key only)."""

    def put_back(self, key: Any, connection: Any) -> None:
        """A connection that carried no request (it was made for one that did not leave), kept
        as after a response."""
        self._putConnection(key, connection)

    def _putConnection(self, key: Any, connection: Any) -> None:
        super()._putConnection(key, connection)
        self._keys[connection] = key
        if not self.max_idle or len(self._timeouts) <= self.max_idle:
            return
        # Those the server closed while idle first (Twisted keeps them until they are asked for
        # or time out), then the one idle the longest: the map of idle connections to their
        # timeouts is in the order they were put back.
        closed = [idle for idle in self._timeouts if idle.state != "QUIESCENT"]
        for idle in list(dict.fromkeys([*closed, *self._timeouts]))[: len(self._timeouts) - self.max_idle]:
            self._timeouts[idle].cancel()
            self._removeConnection(self._keys[idle], idle)

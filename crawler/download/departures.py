"""When a request really left: its bytes sent on the socket, not when a middleware saw it.

A request handed out on its domain's slot can still wait before it leaves: behind CPU work on
the reactor (a large page being parsed, a garbage collection) or for a new connection. Counted
from the middleware, the domain's next request could then reach the site less than the delay
after this one. Twisted writes a request into the connection's buffer and sends it on a later
reactor turn, when the socket is writable; the stamp is a call scheduled after the write, which
runs after that turn's I/O (asyncio runs I/O callbacks before the timers of a turn) and stamps
only once the buffers below the request are empty (a TLS connection holds it until the
handshake is done). So the time stamped is never earlier than the real departure.

Used by the HTTP/1.1 handler (``crawler.download.handler``), through private parts of Twisted's
pool and transports (``crawler.compat``); ``tests/test_spacing_on_the_wire.py`` fails if a
departure goes unstamped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scrapy import Request
from twisted.internet.defer import Deferred

from crawler.compat import holds_unsent_bytes, intercept_reconnect
from crawler.download.idle_pool import IdleBoundedPool

_RECHECK_SECONDS = 0.001
"""How soon a stamp looks again at a connection whose buffers still hold the request."""


class SentReportingPool(IdleBoundedPool):
    """A connection pool that reports when the request it connects for has been sent.

    ``sending`` names the Scrapy request of the next ``getConnection`` call: Twisted's agent
    calls it at once from the handler's ``download_request``, before anything can interleave.
    """

    def __init__(self, reactor: Any, on_sent: Callable[[Request], None]):
        super().__init__(reactor, persistent=True)
        self.reactor = reactor
        self.on_sent = on_sent
        self.sending: Request | None = None

    def getConnection(self, key: Any, endpoint: Any) -> Deferred[Any]:
        request, self.sending = self.sending, None
        connection = super().getConnection(key, endpoint)
        if request is not None:
            connection.addCallback(_ReportingConnection, lambda transport: self._written(request, transport))
        return connection

    def _written(self, request: Request, transport: Any) -> None:
        self.reactor.callLater(0, self._stamp_when_sent, request, transport)

    def _stamp_when_sent(self, request: Request, transport: Any) -> None:
        if holds_unsent_bytes(transport):
            self.reactor.callLater(_RECHECK_SECONDS, self._stamp_when_sent, request, transport)
            return
        self.on_sent(request)


class _ReportingConnection:
    """What the agent sees of a pooled connection: it writes a request and says so."""

    def __init__(self, connection: Any, written: Callable[[Any], None]):
        self._connection = connection
        self._written = written

    def request(self, request: Any) -> Deferred[Any]:
        connection = self._connection
        # The pool's retrying wrapper writes the request again on a new connection when the
        # kept-alive one turns out closed: that write is a departure too, and the later one.
        protocol = intercept_reconnect(connection, lambda new: _ReportingConnection(new, self._written))
        answer = connection.request(request)  # the request is in the transport's buffer now
        self._written(protocol.transport)
        return answer

"""When a request really left: its bytes sent on the socket, not when a middleware saw it.

A request handed out on its domain's slot can still wait before it leaves: behind CPU work on
the reactor (a large page being parsed, a garbage collection) or for a new connection. Counted
from the middleware, the domain's next request could then reach the site less than the delay
after this one. Twisted writes a request into the connection's buffer and sends it on a later
reactor turn, when the socket is writable; the stamp is a call scheduled after the write, which
runs after that turn's I/O (asyncio runs I/O callbacks before the timers of a turn) and stamps
only once the buffers below the request are empty (a TLS connection holds it until the
handshake is done). So the time stamped is never earlier than the real departure.

A request that waits for a new connection (the name looked up, TCP's and TLS's handshakes:
one to several round trips) is asked again, once the connection can carry it, whether its
domain may still be sent to: a 429 read on another connection meanwhile, an operator's pause,
another request of the domain sent on a kept-alive connection. If not, nothing of it is written,
the connection goes back to the pool and the request to the departure gate (``HeldBeforeSending``).

Used by the HTTP/1.1 handler (``crawler.download.handler``), through private parts of Twisted's
pool and transports (``crawler.compat``); ``tests/test_spacing_on_the_wire.py`` fails if a
departure goes unstamped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scrapy import Request
from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.interfaces import IHandshakeListener
from twisted.internet.protocol import connectionDone
from twisted.python.failure import Failure
from twisted.web.client import ResponseNeverReceived
from zope.interface import implementer

from crawler.compat import holds_unsent_bytes, intercept_reconnect, quiescent_callback, tls_handshake_pending
from crawler.download.idle_pool import IdleBoundedPool
from crawler.http.header_limits import BoundedHTTP11ClientFactory, BoundedHTTP11ClientProtocol

_RECHECK_SECONDS = 0.001
"""How soon a stamp looks again at a connection whose buffers still hold the request."""


class HeldBeforeSending(Exception):
    """Nothing of the request was written: its domain could no longer be sent to once its
    connection was ready. The departure gate holds it again."""


class SentReportingPool(IdleBoundedPool):
    """A connection pool that reports when the request it connects for has been sent, and
    writes it only if ``may_send(request, again)`` still holds once the connection can carry it
    (``again``: written before, on a kept-alive connection that turned out closed).

    ``sending`` names the Scrapy request of the next ``getConnection`` call: Twisted's agent
    calls it at once from the handler's ``download_request``, before anything can interleave.
    Its connections are built by ``ReadyTellingFactory`` (``set_protocol_factory``).
    """

    def __init__(self, reactor: Any, on_sent: Callable[[Request], None], may_send: Callable[[Request, bool], bool]):
        super().__init__(reactor, persistent=True)
        self.reactor = reactor
        self.on_sent = on_sent
        self.may_send = may_send
        self.sending: Request | None = None

    def getConnection(self, key: Any, endpoint: Any) -> Deferred[Any]:
        request, self.sending = self.sending, None
        connection = super().getConnection(key, endpoint)
        if request is not None:
            connection.addCallback(_ReportingConnection, self, key, request)
        return connection

    def _written(self, request: Request, transport: Any) -> None:
        self.reactor.callLater(0, self._stamp_when_sent, request, transport)

    def _stamp_when_sent(self, request: Request, transport: Any) -> None:
        if holds_unsent_bytes(transport):
            self.reactor.callLater(_RECHECK_SECONDS, self._stamp_when_sent, request, transport)
            return
        self.on_sent(request)


class _ReportingConnection:
    """What the agent sees of a pooled connection: once the connection can carry a request, it
    writes the request, if its domain may still be sent to, and says so."""

    def __init__(self, connection: Any, owner: SentReportingPool, key: Any, sending: Request, again: bool = False):
        self._connection = connection
        self._owner = owner
        self._key = key
        self._request = sending
        self._again = again
        """A new connection of the pool's retrying wrapper: the request was written before."""

    def request(self, request: Any) -> Deferred[Any]:
        connection = self._connection
        # The pool's retrying wrapper writes the request again on a new connection when the
        # kept-alive one turns out closed: that write is a departure too, and the later one.
        protocol = intercept_reconnect(
            connection, lambda new: _ReportingConnection(new, self._owner, self._key, self._request, again=True)
        )
        return protocol.ready().addCallback(lambda _: self._write(connection, protocol, request))

    def _write(self, connection: Any, protocol: Any, request: Any) -> Deferred[Any]:
        owner = self._owner
        if not owner.may_send(self._request, self._again):
            owner.put_back(self._key, protocol)  # unused: as good as after a response
            return fail(HeldBeforeSending())
        answer = connection.request(request)  # the request is in the transport's buffer now
        owner._written(self._request, protocol.transport)
        return answer


@implementer(IHandshakeListener)
class ReadyTellingProtocol(BoundedHTTP11ClientProtocol):
    """The crawl's HTTP/1.1 protocol, which tells when its connection can carry a request."""

    _ready: Deferred[None] | None = None

    def ready(self) -> Deferred[None]:
        """Fires once the connection can carry a request: at once, or when TLS's handshake is
        done (Twisted would hold the request's bytes until then). Fails as a request written
        before would, with the reason the connection was lost for (a TLS error)."""
        if not tls_handshake_pending(self):
            return succeed(None)
        # Cancelled (the download's timeout): the connection is dropped, as with a request written
        self._ready = Deferred(lambda _: self._abandon())
        return self._ready

    def handshakeCompleted(self) -> None:
        ready, self._ready = self._ready, None
        if ready is not None:
            ready.callback(None)

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        super().connectionLost(reason)
        ready, self._ready = self._ready, None
        if ready is not None:
            ready.errback(ResponseNeverReceived([reason]))

    def _abandon(self) -> None:
        self._ready = None
        self.transport.abortConnection()


class ReadyTellingFactory(BoundedHTTP11ClientFactory):
    def buildProtocol(self, addr: Any) -> ReadyTellingProtocol:
        return ReadyTellingProtocol(quiescent_callback(self), self.limits)

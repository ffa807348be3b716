"""``CRAWLER_MAX_IDLE_CONNECTIONS``: the pool keeps that many idle connections in all, closing the
one idle the longest (Twisted's own pool and protocol, on Twisted's test transports)."""

from __future__ import annotations

from twisted.internet.error import ConnectionDone
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.python.failure import Failure
from twisted.web._newclient import HTTP11ClientProtocol

from crawler.download.idle_pool import IdleBoundedPool


def _idle_connection() -> HTTP11ClientProtocol:
    protocol = HTTP11ClientProtocol()
    protocol.makeConnection(StringTransport())
    return protocol


def _pool(max_idle: int) -> tuple[IdleBoundedPool, MemoryReactorClock]:
    reactor = MemoryReactorClock()
    pool = IdleBoundedPool(reactor)
    pool.max_idle = max_idle
    return pool, reactor


def test_past_the_bound_the_connection_idle_the_longest_is_closed() -> None:
    pool, reactor = _pool(2)
    connections = {host: _idle_connection() for host in ("a", "b", "c")}
    for host, connection in connections.items():
        pool._putConnection(("http", host, 80), connection)
        reactor.advance(1)
    assert connections["a"].transport.disconnecting
    assert not connections["b"].transport.disconnecting and not connections["c"].transport.disconnecting
    assert pool._connections == {
        ("http", "a", 80): [],
        ("http", "b", 80): [connections["b"]],
        ("http", "c", 80): [connections["c"]],
    }
    assert len(reactor.getDelayedCalls()) == 2  # the closed one's timeout went with it
    reactor.advance(pool.cachedConnectionTimeout)  # the others' timeouts close them, as Twisted's do
    assert all(c.transport.disconnecting for c in connections.values())


def test_past_the_bound_a_connection_the_server_closed_goes_first() -> None:
    pool, _ = _pool(2)
    first, second, third = (_idle_connection() for _ in range(3))
    pool._putConnection(("http", "a", 80), first)
    pool._putConnection(("http", "b", 80), second)
    second.connectionLost(Failure(ConnectionDone()))  # the server closed it while idle
    pool._putConnection(("http", "c", 80), third)
    assert pool._connections == {("http", "a", 80): [first], ("http", "b", 80): [], ("http", "c", 80): [third]}
    assert not first.transport.disconnecting


def test_a_connection_put_back_again_is_idle_from_then() -> None:
    pool, _ = _pool(2)
    first, second, third = (_idle_connection() for _ in range(3))
    pool._putConnection(("http", "a", 80), first)
    pool._putConnection(("http", "b", 80), second)
    pool.getConnection(("http", "a", 80), endpoint=None)  # the idle one is taken: no new connection
    pool._putConnection(("http", "a", 80), first)  # used, and quiescent again
    pool._putConnection(("http", "c", 80), third)
    assert second.transport.disconnecting
    assert not first.transport.disconnecting and not third.transport.disconnecting


def test_no_bound_keeps_every_host_s_connection() -> None:
    pool, _ = _pool(0)
    connections = [_idle_connection() for _ in range(300)]
    for n, connection in enumerate(connections):
        pool._putConnection(("http", f"host{n}", 80), connection)
    assert not any(c.transport.disconnecting for c in connections)


def test_the_oldest_closed_connection_is_removed_once() -> None:
    pool, _ = _pool(2)
    first, second = _idle_connection(), _idle_connection()
    pool._putConnection(("http", "a", 80), first)
    pool._putConnection(("http", "b", 80), second)
    first.connectionLost(Failure(ConnectionDone()))
    pool.max_idle = 1  # two over: the closed one, which is also the oldest, then the next
    pool._putConnection(("http", "c", 80), third := _idle_connection())
    assert pool._connections == {("http", "a", 80): [], ("http", "b", 80): [], ("http", "c", 80): [third]}

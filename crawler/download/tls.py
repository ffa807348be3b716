"""TLS options made when a connection needs them, not for every request.

Twisted's agent asks the HTTPS policy for a request's TLS options (``creatorForNetloc``) before
it looks in the pool, and Scrapy's policy makes a whole OpenSSL context there: some 110 µs a
request, thrown away unused when the request goes out on a kept-alive connection, as most of a
site's requests do. ``OptionsWhenConnecting`` hands out a stand-in that asks the policy only
when a TLS connection starts (``clientConnectionForTLS``), once, and then behaves as the
options it got; anything else read from it (HTTP/2's handler reads the OpenSSL context) gets
them made first. Each TLS connection started is counted (``downloader/tls_connection_count``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from OpenSSL.SSL import Connection
from twisted.internet.interfaces import IOpenSSLClientConnectionCreator
from twisted.web.iweb import IPolicyForHTTPS
from zope.interface import implementer


@implementer(IPolicyForHTTPS)
class OptionsWhenConnecting:
    """The HTTPS policy ``policy``, whose options for a host are made only for a TLS connection;
    ``connecting()`` is called as each one starts."""

    def __init__(self, policy: Any, connecting: Callable[[], None]):
        self.policy = policy
        self._connecting = connecting

    def creatorForNetloc(self, hostname: bytes, port: int) -> _MadeWhenConnecting:
        return _MadeWhenConnecting(lambda: self.policy.creatorForNetloc(hostname, port), self._connecting)


@implementer(IOpenSSLClientConnectionCreator)
class _MadeWhenConnecting:
    def __init__(self, make: Callable[[], Any], connecting: Callable[[], None]):
        self._make = make
        self._connecting = connecting
        self._options: Any = None

    def _made(self) -> Any:
        if self._options is None:
            self._options = self._make()
        return self._options

    def clientConnectionForTLS(self, tlsProtocol: Any) -> Connection:
        self._connecting()
        return self._made().clientConnectionForTLS(tlsProtocol)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._made(), name)

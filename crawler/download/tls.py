"""TLS options made when a connection needs them, not for every request.

Twisted's agent asks the HTTPS policy for a request's TLS options (``creatorForNetloc``) before
it looks in the pool, and Scrapy's policy builds them there (its certificate options and a
client's options over them: 75 to 120 µs), thrown away unused when the request goes out on a
kept-alive connection, as most of a site's requests do. ``OptionsWhenConnecting`` hands out a
stand-in that asks the policy only when a TLS connection starts (``clientConnectionForTLS``),
once. A host's first request has them made at once, so that a policy that cannot make them
(settings it refuses, a custom policy failing for a host) fails the request there, as without
the stand-in, rather than inside the connection, where Twisted would leave it waiting for its
timeout. Each TLS connection started is counted (``downloader/tls_connection_count``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any

from OpenSSL.SSL import Connection
from twisted.internet.interfaces import IOpenSSLClientConnectionCreator
from twisted.web.iweb import IPolicyForHTTPS
from zope.interface import implementer

KNOWN_HOSTS = 4096
"""Hosts remembered as having had options made (the most recent): a crawl of more domains makes
them at once again for a host it comes back to."""


@implementer(IPolicyForHTTPS)
class OptionsWhenConnecting:
    """The HTTPS policy ``policy``, whose options for a host are made only for a TLS connection,
    but for the host's first request; ``connecting()`` is called as each connection starts."""

    def __init__(self, policy: Any, connecting: Callable[[], None]):
        self.policy = policy
        self._connecting = connecting
        self._known: OrderedDict[tuple[bytes, int], None] = OrderedDict()

    def creatorForNetloc(self, hostname: bytes, port: int) -> _MadeWhenConnecting:
        creator = _MadeWhenConnecting(partial(self.policy.creatorForNetloc, hostname, port), self._connecting)
        host, known = (hostname, port), self._known
        if host in known:
            known.move_to_end(host)
        else:
            creator.made()  # the policy's error, if any, raised here
            known[host] = None
            if len(known) > KNOWN_HOSTS:
                known.popitem(last=False)
        return creator


@implementer(IOpenSSLClientConnectionCreator)
class _MadeWhenConnecting:
    def __init__(self, make: Callable[[], Any], connecting: Callable[[], None]):
        self._make = make
        self._connecting = connecting
        self._options: Any = None

    def made(self) -> Any:
        """The policy's options, made on the first call."""
        if self._options is None:
            self._options = self._make()
        return self._options

    def clientConnectionForTLS(self, tlsProtocol: Any) -> Connection:
        self._connecting()
        return self.made().clientConnectionForTLS(tlsProtocol)

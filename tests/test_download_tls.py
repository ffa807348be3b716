"""TLS options made for each new connection, not for every request (``crawler.download.tls``):
the stand-in asks the policy nothing until a TLS connection starts (but for a host's first
request, where the policy's errors show), and an HTTPS crawl over kept-alive connections starts
as many as its connections, not one a request."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from twisted.internet._sslverify import ClientTLSOptions
from twisted.internet.interfaces import IOpenSSLClientConnectionCreator
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.testing import StringTransport
from twisted.protocols.tls import TLSMemoryBIOFactory
from twisted.web.client import BrowserLikePolicyForHTTPS

from bench.realweb import RealWeb
from crawler.download.tls import OptionsWhenConnecting
from tests.helpers import Database, crawl, linked_pages

PAGES = 10


class CountingPolicy(BrowserLikePolicyForHTTPS):
    """Twisted's own policy, counting the options it makes."""

    def __init__(self) -> None:
        super().__init__()
        self.made: list[bytes] = []

    def creatorForNetloc(self, hostname: bytes, port: int) -> Any:
        self.made.append(hostname)
        return super().creatorForNetloc(hostname, port)


def test_a_host_s_later_requests_have_no_options_made_until_a_connection_starts() -> None:
    policy, connections = CountingPolicy(), []
    lazy = OptionsWhenConnecting(policy, lambda: connections.append(1))
    first = lazy.creatorForNetloc(b"example.com", 443)
    assert policy.made == [b"example.com"]  # a host's first: at once, so that an error shows there
    creators = [lazy.creatorForNetloc(b"example.com", 443) for _ in range(50)]
    assert policy.made == [b"example.com"] and connections == []
    assert all(IOpenSSLClientConnectionCreator.providedBy(creator) for creator in [first, *creators])
    lazy.creatorForNetloc(b"example.com", 8443)  # another port, another host
    assert policy.made == [b"example.com"] * 2
    assert isinstance(creators[0].made(), ClientTLSOptions)
    assert policy.made == [b"example.com"] * 3


def test_a_policy_that_cannot_make_a_host_s_options_fails_its_first_request_at_once() -> None:
    class Refusing(BrowserLikePolicyForHTTPS):
        def creatorForNetloc(self, hostname: bytes, port: int) -> Any:
            raise ValueError(f"no options for {hostname!r}")

    lazy = OptionsWhenConnecting(Refusing(), lambda: None)
    for _ in range(2):  # not remembered as made
        with pytest.raises(ValueError, match="no options for b'example.com'"):
            lazy.creatorForNetloc(b"example.com", 443)


def test_each_connection_started_is_counted_and_its_options_made_once() -> None:
    policy, connections = CountingPolicy(), []
    lazy = OptionsWhenConnecting(policy, lambda: connections.append(1))
    lazy.creatorForNetloc(b"example.com", 443)
    creator = lazy.creatorForNetloc(b"example.com", 443)
    factory = TLSMemoryBIOFactory(creator, True, Factory.forProtocol(Protocol))
    first = _connect(factory)
    assert first.startswith(b"\x16\x03") and b"example.com" in first  # a ClientHello, the name in it
    # The pool's retrying wrapper connects again with the same endpoint, hence the same options.
    assert _connect(factory).startswith(b"\x16\x03")
    assert policy.made == [b"example.com"] * 2 and len(connections) == 2


def _connect(factory: TLSMemoryBIOFactory) -> bytes:
    """What a new TLS connection of ``factory`` sends first."""
    transport = StringTransport()
    factory.buildProtocol(None).makeConnection(transport)
    return transport.value()


@pytest.fixture(scope="module")
def tls_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealWeb]:
    site = linked_pages(tmp_path_factory.mktemp("tls-site"), PAGES)
    with RealWeb(1, crawl_delay=0.05, https=True, site=site) as web:
        yield web


@pytest.mark.integration
def test_an_https_crawl_starts_a_tls_connection_per_connection_not_per_request(
    tls_web: RealWeb, tmp_path: Path
) -> None:
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    tls_web.clear()
    result = crawl("links", database, url=tls_web.url(0, "/page-0.html"), settings={"LOG_LEVEL": "INFO"})
    served = tls_web.log()
    assert sorted(r.path for r in served) == sorted(["/robots.txt"] + [f"/page-{n}.html" for n in range(PAGES)])
    rows = database.pages()
    assert sum(1 for row in rows.values() if row["status"] == "fetched") == PAGES
    # Two requests at a time to the domain at most, each connection kept alive: one or two
    # connections for the eleven requests.
    (count,) = [line for line in result.stderr.splitlines() if "'downloader/tls_connection_count'" in line]
    assert int(count.split(":")[1].strip(" ,}")) in (1, 2), count


@pytest.mark.integration
def test_tls_settings_that_cannot_be_met_fail_the_requests_with_their_error(tls_web: RealWeb, tmp_path: Path) -> None:
    # Not a wait for the download's timeout inside a connection that never starts: the seed's
    # robots.txt fails at once, and the job with "every seed unreachable" (exit status 6).
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    settings = {"DOWNLOADER_CLIENT_TLS_CIPHERS": "NOSUCHCIPHER", "DOWNLOAD_TIMEOUT": "60"}
    result = crawl("links", database, url=tls_web.url(0, "/page-0.html"), settings=settings, status=6)
    assert "Unhandled Error" not in result.stderr
    (row,) = database.pages().values()
    assert row["status"] == "error" and "ciphers" in row["error"], row

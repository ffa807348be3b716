"""The client's address behind reverse proxies: X-Forwarded-For believed from trusted proxies
only, read from the right, in every spelling proxies write; and what the nearest proxy says of
the scheme and host."""

from __future__ import annotations

from ipaddress import ip_network

import pytest

from crawler.api.forwarded import UNKNOWN, TrustedProxies, parse_address

PROXIES = TrustedProxies((ip_network("10.0.0.0/8"), ip_network("fd00::/8")))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("192.0.2.1", "192.0.2.1"),
        (" 192.0.2.1 ", "192.0.2.1"),
        ("192.0.2.1:4711", "192.0.2.1"),
        ("2001:db8::1", "2001:db8::1"),
        ("[2001:db8::1]", "2001:db8::1"),
        ("[2001:db8::1]:4711", "2001:db8::1"),
        ("::ffff:192.0.2.1", "192.0.2.1"),
        ("[::ffff:10.1.2.3]:80", "10.1.2.3"),
        ("unknown", None),
        ("_hidden", None),
        ("", None),
        ("192.0.2.256", None),
        ("example.org", None),
        ("example.org:80", None),
        ("[2001:db8::1", None),
        ("[2001:db8::1]x", None),
        ("2001:db8::1]", None),
    ],
)
def test_an_address_as_proxies_write_it(value: str, expected: str | None) -> None:
    parsed = parse_address(value)
    assert (None if parsed is None else str(parsed)) == expected


@pytest.mark.parametrize(
    ("peer", "forwarded_for", "client"),
    [
        # no proxy trusted: the peer, whatever it claims
        ("192.0.2.1", [], "192.0.2.1"),
        ("192.0.2.1", ["198.51.100.7"], "192.0.2.1"),
        ("192.0.2.1", ["10.0.0.1"], "192.0.2.1"),
        # a trusted proxy: the address it received the request from
        ("10.0.0.1", ["198.51.100.7"], "198.51.100.7"),
        ("10.0.0.1", ["198.51.100.7:5000"], "198.51.100.7"),
        ("10.0.0.1", [], "10.0.0.1"),
        ("10.0.0.1", [""], "10.0.0.1"),
        # a client's forged entries stay left of what the proxy appended
        ("10.0.0.1", ["1.2.3.4, 198.51.100.7"], "198.51.100.7"),
        ("10.0.0.1", ["10.9.9.9, 198.51.100.7"], "198.51.100.7"),
        # a chain of trusted proxies, in one header or several
        ("10.0.0.1", ["198.51.100.7, 10.0.0.2"], "198.51.100.7"),
        ("10.0.0.1", ["198.51.100.7", "10.0.0.2"], "198.51.100.7"),
        ("10.0.0.1", ["1.2.3.4, 198.51.100.7", "10.0.0.3, 10.0.0.2"], "198.51.100.7"),
        # every hop trusted: the leftmost
        ("10.0.0.1", ["10.0.0.3, 10.0.0.2"], "10.0.0.3"),
        # junk from a trusted proxy: no further than the proxy
        ("10.0.0.1", ["198.51.100.7, unknown"], "10.0.0.1"),
        ("10.0.0.1", ["198.51.100.7, garbage, 10.0.0.2"], "10.0.0.2"),
        # IPv6, and IPv4 seen through a dual-stack socket
        ("fd00::1", ["2001:db8::7"], "2001:db8::7"),
        ("fd00::1", ["[2001:db8::7]:4711"], "2001:db8::7"),
        ("::ffff:10.0.0.1", ["198.51.100.7"], "198.51.100.7"),
        ("::ffff:192.0.2.1", ["198.51.100.7"], "192.0.2.1"),
        ("2001:db8::1", ["198.51.100.7"], "2001:db8::1"),
        # an IPv4 network does not hold an IPv6 address, nor the reverse
        ("::a00:1", ["198.51.100.7"], "::a00:1"),
        # a connection without an address
        (None, ["198.51.100.7"], UNKNOWN),
        ("", [], UNKNOWN),
    ],
)
def test_the_client_is_the_first_address_from_the_right_that_is_not_a_trusted_proxy(
    peer: str | None, forwarded_for: list[str], client: str
) -> None:
    assert PROXIES.client(peer, forwarded_for) == client


def test_with_no_trusted_proxy_the_header_is_never_believed() -> None:
    nobody = TrustedProxies()
    assert nobody.client("10.0.0.1", ["198.51.100.7"]) == "10.0.0.1"
    assert nobody.client("127.0.0.1", ["198.51.100.7"]) == "127.0.0.1"
    assert not nobody.trusts("127.0.0.1")


@pytest.mark.parametrize(
    ("peer", "values", "said"),
    [
        ("10.0.0.1", ["https"], "https"),
        ("10.0.0.1", ["http, https"], "https"),  # the nearest proxy appended last
        ("10.0.0.1", ["http", "https"], "https"),
        ("10.0.0.1", [], None),
        ("10.0.0.1", [" "], None),
        ("192.0.2.1", ["https"], None),  # anyone else's header is not believed
        (None, ["https"], None),
    ],
)
def test_what_the_nearest_trusted_proxy_says(peer: str | None, values: list[str], said: str | None) -> None:
    assert PROXIES.forwarded(peer, values) == said


@pytest.mark.parametrize(
    ("peer", "trusted"),
    [
        ("10.0.0.1", True),
        ("10.255.255.255", True),
        ("11.0.0.1", False),
        ("fd12::1", True),
        ("fe80::1", False),
        ("::ffff:10.0.0.1", True),
        ("not an address", False),
        (None, False),
    ],
)
def test_which_peers_are_trusted(peer: str | None, trusted: bool) -> None:
    assert PROXIES.trusts(peer) is trusted

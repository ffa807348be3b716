"""The address guard's decisions, for every spelling of an address; no packet is sent (the
decisions are pure, and ``socket.inet_aton`` only parses)."""

from __future__ import annotations

import socket
from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

from crawler.guard import AddressPolicy, literal_address, parse_networks, refusal
from crawler.guard.addresses import embedded_ipv4
from crawler.guard.proxies import bypasses_proxy
from crawler.guard.resolver import address_policy

LOOPBACK_21 = IPv4Address("127.0.0.21")


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.21",
        "2130706453",
        "0x7f000015",
        "0X7F000015",
        "0177.0.0.21",
        "0177.0.0.025",
        "127.21",
        "127.0.21",
        "0x7f.21",
        "0x7f.0.0.0x15",
        "127.0.0.21.",
        "[::ffff:127.0.0.21]",
        "[::ffff:7f00:15]",
        "[0:0:0:0:0:ffff:127.0.0.21]",
        "[::FFFF:127.0.0.21]",
    ],
)
def test_every_spelling_of_an_address_is_read_as_that_address(host: str) -> None:
    address = literal_address(host)
    assert address is not None
    inner = embedded_ipv4(address) if isinstance(address, IPv6Address) else None
    assert (inner[1] if inner else address) == LOOPBACK_21
    found = refusal(address)
    assert found is not None and found.category == "loopback" and "127.0.0.21" in found.reason


@pytest.mark.parametrize(
    "host",
    [
        "example.com",
        "localhost",
        "127.0.0.1.example",
        "0x",
        "08",
        "1..2",
        "1.2.3.4.5",
        "1.2.3.256",
        "4294967296",
        "",
        "[::1",
        "xn--e1afmkfd",
    ],
)
def test_names_and_invalid_numbers_are_not_literal_addresses(host: str) -> None:
    assert literal_address(host) is None


@given(st.text(alphabet="0123456789xXabcdefABCDEF.", max_size=20))
def test_ipv4_spellings_are_read_as_the_resolver_reads_them(host: str) -> None:
    # glibc's inet_aton is what gethostbyname applies to a numeric host; a trailing dot, which
    # it refuses, is read as the address (refusing more, never less).
    try:
        expected: IPv4Address | None = IPv4Address(socket.inet_aton(host.removesuffix(".")))
    except OSError:
        expected = None
    assert literal_address(host) == expected


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_every_ipv4_address_as_a_decimal_and_a_hex_number(number: int) -> None:
    assert literal_address(str(number)) == IPv4Address(number)
    assert literal_address(hex(number)) == IPv4Address(number)
    assert literal_address(f"[::ffff:{IPv4Address(number)}]") == IPv6Address(0xFFFF00000000 | number)


@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("::1", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("169.254.169.254", "metadata"),
        ("fd00:ec2::254", "metadata"),
        ("100.100.100.200", "metadata"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("ff02::1", "multicast"),
        ("ff0e::1", "multicast"),
        ("100.64.0.1", "shared"),
        ("100.127.255.254", "shared"),
        ("10.0.0.1", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("192.0.2.1", "private"),
        ("198.18.0.1", "private"),
        ("2001:db8::1", "private"),
        ("240.0.0.1", "private"),
        ("255.255.255.255", "private"),
        ("fec0::1", "reserved"),
        ("192.0.0.8", "reserved"),
        ("3fff::1", "reserved"),
        # IPv4 inside IPv6: the inner address decides
        ("::ffff:10.0.0.1", "private"),
        ("64:ff9b::7f00:1", "loopback"),
        ("64:ff9b::a9fe:a9fe", "metadata"),
        ("64:ff9b:1::a00:1", "private"),
        ("2002:7f00:1::", "loopback"),
        ("2002:a00:1::1", "private"),
        ("2002:a9fe:a9fe::", "metadata"),
        ("::127.0.0.1", "loopback"),
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"),
    ],
)
def test_non_global_addresses_are_refused_with_their_category(address: str, category: str) -> None:
    found = refusal(ip_address(address))
    assert found is not None, address
    assert found.category == category


@pytest.mark.parametrize(
    "address",
    [
        "93.184.215.14",
        "8.8.8.8",
        "1.1.1.1",
        "2606:4700::1111",
        "2a00:1450:4001::200e",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",
        "2002:808:808::1",
        "100.63.255.255",
        "100.128.0.1",
        "172.32.0.1",
    ],
)
def test_global_addresses_are_allowed(address: str) -> None:
    assert refusal(ip_address(address)) is None


def test_allowed_networks_let_their_addresses_through_in_every_form() -> None:
    networks = parse_networks(["10.0.0.0/8", "fd00::/8", "192.168.1.7"])
    for address in ("10.1.2.3", "::ffff:10.1.2.3", "64:ff9b::a01:203", "fd00::5", "192.168.1.7"):
        assert refusal(ip_address(address), networks) is None, address
    for address in ("192.168.1.8", "127.0.0.1", "169.254.169.254", "fc00::1"):
        assert refusal(ip_address(address), networks) is not None, address


def test_a_bad_network_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="CRAWLER_ALLOWED_NETWORKS: 'intranet' is not a network"):
        parse_networks(["intranet"])


def test_seeds_are_allowed_whatever_their_address_and_spelling() -> None:
    policy = AddressPolicy()
    policy.allow_seed("127.0.0.10")
    policy.allow_seed("Intranet.Example.")
    assert policy.check_host("127.0.0.10") is None
    assert policy.check_host("2130706442") is None  # the seed, spelled otherwise
    assert policy.check_host("127.0.0.11") is not None
    assert policy.check_resolved("intranet.example", "10.0.0.5") is None
    assert policy.check_resolved("127.0.0.10", "127.0.0.10") is None


def test_a_proxy_is_allowed_as_what_the_crawler_connects_to_not_as_a_url_host() -> None:
    policy = AddressPolicy()
    policy.allow_proxy("127.0.0.1")
    policy.allow_proxy("Proxy.Internal")
    assert policy.check_connection("127.0.0.1", "127.0.0.1") is None
    assert policy.check_connection("2130706433", "127.0.0.1") is None  # the proxy, spelled otherwise
    assert policy.check_connection("proxy.internal.", "10.0.0.5") is None
    # A URL whose host is the proxy's address, or a name resolving to it, is judged as any other.
    assert policy.check_host("127.0.0.1") is not None
    assert policy.check_resolved("localhost", "127.0.0.1") is not None
    assert policy.check_resolved("proxy.internal", "10.0.0.5") is not None
    assert policy.check_connection("localhost", "127.0.0.1") is not None


def test_the_proxies_of_the_setting_and_the_environment_are_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("https_proxy", "http://10.0.0.7:3128")
    policy = address_policy(
        Settings({"CRAWLER_PROXY": "http://user:secret@127.0.0.9:8888", "CRAWLER_ALLOWED_NETWORKS": '["10.9.0.0/16"]'})
    )
    assert policy.proxy_addresses == {ip_address("127.0.0.9"), ip_address("10.0.0.7")}
    assert policy.allowed_networks == (ip_network("10.9.0.0/16"),)


def test_names_are_decided_on_what_they_resolve_to() -> None:
    policy = AddressPolicy(parse_networks(["10.9.0.0/16"]))
    assert policy.check_host("rebinding.example") is None  # nothing to decide before the lookup
    found = policy.check_resolved("rebinding.example", "127.0.0.1")
    assert (
        found is not None and found.reason == "rebinding.example resolves to 127.0.0.1; 127.0.0.1 is a loopback address"
    )
    assert policy.check_resolved("rebinding.example", "93.184.215.14") is None
    assert policy.check_resolved("rebinding.example", "10.9.1.1") is None
    assert policy.check_resolved("metadata.example", "169.254.169.254").category == "metadata"  # type: ignore[union-attr]


def test_literal_hosts_are_refused_before_any_lookup() -> None:
    policy = AddressPolicy()
    assert policy.check_host("example.com") is None
    for host in ("0x7f000015", "[::ffff:127.0.0.21]", "169.254.169.254", "[fd00:ec2::254]", "[fe80::1%25eth0]", "10.1"):
        assert policy.check_host(host) is not None, host


@given(st.ip_addresses())
def test_refusal_agrees_with_ipaddress_on_plain_addresses(address: IPv4Address | IPv6Address) -> None:
    found = refusal(address)
    if isinstance(address, IPv6Address) and embedded_ipv4(address) is not None:
        inner = embedded_ipv4(address)[1]  # type: ignore[index]
        assert (found is None) == (refusal(inner) is None)
    elif not address.is_global or address.is_multicast:
        assert found is not None
    else:
        assert found is None or found.category in ("reserved", "metadata")


def test_networks_of_both_versions_do_not_mix() -> None:
    assert refusal(ip_address("::1"), (ip_network("127.0.0.0/8"),)) is not None


@pytest.mark.parametrize(
    ("host", "no_proxy", "direct"),
    [
        ("www.example.com", ["example.com"], True),
        ("www.example.com", [".example.com"], True),
        ("example.com", [".example.com"], True),
        ("badexample.com", ["example.com"], False),
        ("Example.COM.", ["example.com"], True),
        ("example.org", ["example.com", "*"], True),
        ("example.org", [], False),
        ("127.0.0.5", ["127.0.0.5"], True),
    ],
)
def test_hosts_of_the_no_proxy_list_and_under_them_go_direct(host: str, no_proxy: list[str], direct: bool) -> None:
    assert bypasses_proxy(host, no_proxy) is direct

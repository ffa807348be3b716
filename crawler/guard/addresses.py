"""Which addresses the crawler may connect to: pure decisions on ``ipaddress`` values, no I/O.

A page on the open web must not make the crawler reach the network it runs in. An address is
refused unless it is globally routable, whatever its spelling: the shorter, decimal, hex and
octal forms a resolver's ``inet_aton`` accepts (``127.21``, ``2130706453``, ``0x7f000015``,
``0177.0.0.21``), and IPv4 addresses carried inside IPv6 (mapped, compatible, NAT64, 6to4,
Teredo). Hosts given as seeds and networks the operator lists are allowed whatever the address.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network

Address = IPv4Address | IPv6Address
Network = IPv4Network | IPv6Network

METADATA_ADDRESSES = frozenset(
    {ip_address("169.254.169.254"), ip_address("fd00:ec2::254"), ip_address("100.100.100.200")}
)
"""Cloud instance metadata services (AWS, GCP, Azure, Alibaba): credentials live there."""
SHARED_ADDRESS_SPACE = ip_network("100.64.0.0/10")  # RFC 6598, carrier-grade NAT
_MAPPED = ip_network("::ffff:0:0/96")
_COMPATIBLE = ip_network("::/96")  # deprecated IPv4-compatible form, ::a.b.c.d
_NAT64 = (ip_network("64:ff9b::/96"), ip_network("64:ff9b:1::/48"))  # RFC 6052, RFC 8215
_SIX_TO_FOUR = ip_network("2002::/16")  # RFC 3056
_TEREDO = ip_network("2001::/32")  # RFC 4380
_SPECIAL_PURPOSE = (ip_network("192.0.0.0/24"), ip_network("3fff::/20"))
"""IANA special-purpose blocks that the ``ipaddress`` of older Pythons calls global."""
_INET_ATON_LIMITS = {1: 0xFFFFFFFF, 2: 0xFFFFFF, 3: 0xFFFF, 4: 0xFF}
"""The largest value of the last part of an ``inet_aton`` address of 1 to 4 parts."""


@dataclass(frozen=True, slots=True)
class Refusal:
    category: str
    """A short name for stats: ``loopback``, ``private``, ``metadata`` …"""
    reason: str
    """What the row and the log say."""


@lru_cache(maxsize=4096)  # asked for every request and redirect of a host; addresses are immutable
def literal_address(host: str) -> Address | None:
    """The address ``host`` names literally, in any spelling a resolver accepts; None for a
    name. Brackets, an IPv6 zone and one trailing dot are ignored."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        try:
            return ip_address(host.split("%", 1)[0])
        except ValueError:
            return None
    host = host.removesuffix(".")
    return _inet_aton(host)


def _inet_aton(host: str) -> IPv4Address | None:
    """IPv4 as glibc's ``inet_aton`` reads it: 1 to 4 parts, each decimal, ``0x`` hex or
    ``0`` octal; the last part fills the bytes left."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values = [_aton_part(part) for part in parts]
    if any(value is None for value in values):
        return None
    *leading, last = values
    if any(value > 0xFF for value in leading) or last > _INET_ATON_LIMITS[len(parts)]:  # type: ignore[operator]
        return None
    number = 0
    for i, value in enumerate(leading):
        number |= value << (24 - 8 * i)  # type: ignore[operator]
    return IPv4Address(number | last)  # type: ignore[operator]


def _aton_part(part: str) -> int | None:
    if part[:2] in ("0x", "0X"):
        digits, base = part[2:], 16
        valid = "0123456789abcdefABCDEF"
    elif part.startswith("0") and len(part) > 1:
        digits, base, valid = part[1:], 8, "01234567"
    else:
        digits, base, valid = part, 10, "0123456789"
    if not digits or any(c not in valid for c in digits):
        return None
    return int(digits, base)


def embedded_ipv4(address: IPv6Address) -> tuple[str, IPv4Address] | None:
    """The IPv4 address an IPv6 address carries, with the name of the form, if any."""
    if address in _MAPPED:
        return "IPv4-mapped", IPv4Address(int(address) & 0xFFFFFFFF)
    if any(address in network for network in _NAT64):
        return "NAT64", IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _SIX_TO_FOUR:
        return "6to4", IPv4Address((int(address) >> 80) & 0xFFFFFFFF)
    if address in _TEREDO:
        return "Teredo", IPv4Address(~int(address) & 0xFFFFFFFF)  # the client, obfuscated
    if address in _COMPATIBLE and int(address) > 1:  # not :: nor ::1
        return "IPv4-compatible", IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def refusal(address: Address, allowed_networks: Iterable[Network] = ()) -> Refusal | None:
    """Why the crawler must not connect to ``address``, or None when it may."""
    allowed = tuple(allowed_networks)
    if in_networks(address, allowed):
        return None
    if isinstance(address, IPv6Address):
        embedded = embedded_ipv4(address)
        if embedded is not None:
            form, inner = embedded
            if in_networks(inner, allowed):
                return None
            category = _category(inner)
            if category is None:
                return None  # a global IPv4 address reached through IPv6
            return Refusal(category, f"{address} is the {form} form of {inner}, {_DESCRIPTIONS[category]}")
    category = _category(address)
    return Refusal(category, f"{address} is {_DESCRIPTIONS[category]}") if category else None


_DESCRIPTIONS = {
    "unspecified": "an unspecified address",
    "loopback": "a loopback address",
    "metadata": "a cloud metadata address",
    "link-local": "a link-local address",
    "multicast": "a multicast address",
    "shared": "in the shared address space of carrier-grade NAT",
    "private": "a private address",
    "reserved": "a reserved address",
    "not-global": "not globally routable",
}


def _category(address: Address) -> str | None:
    if address.is_unspecified:
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address in METADATA_ADDRESSES:
        return "metadata"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if isinstance(address, IPv4Address) and address in SHARED_ADDRESS_SPACE:
        return "shared"
    if address.is_private:
        return "private"
    if (
        address.is_reserved
        or (isinstance(address, IPv6Address) and address.is_site_local)
        or in_networks(address, _SPECIAL_PURPOSE)
    ):
        return "reserved"
    if not address.is_global:
        return "not-global"
    return None


def in_networks(address: Address, networks: tuple[Network, ...]) -> bool:
    return any(address.version == network.version and address in network for network in networks)


def parse_networks(values: Iterable[str], setting: str = "CRAWLER_ALLOWED_NETWORKS") -> tuple[Network, ...]:
    """Networks from the entries of a setting (``10.0.0.0/8``, ``fd00::/8``, a single address);
    raises ValueError naming the setting and the bad entry."""
    networks = []
    for value in values:
        try:
            networks.append(ip_network(value.strip(), strict=False))
        except ValueError as exc:
            raise ValueError(f"{setting}: {value!r} is not a network: {exc}") from None
    return tuple(networks)


@dataclass(slots=True)
class AddressPolicy:
    """The decision with its exceptions: networks the operator allows, the seeds' hosts
    (names, and addresses in any spelling), which are allowed whatever they resolve to, and the
    proxies' hosts, allowed only as what the crawler connects to (``check_connection``): a URL's
    host that is the proxy's address is judged as any other."""

    allowed_networks: tuple[Network, ...] = ()
    seed_names: set[str] = field(default_factory=set)
    seed_addresses: set[Address] = field(default_factory=set)
    proxy_names: set[str] = field(default_factory=set)
    proxy_addresses: set[Address] = field(default_factory=set)

    def allow_seed(self, host: str) -> None:
        address = literal_address(host)
        if address is not None:
            self.seed_addresses.add(address)
        else:
            self.seed_names.add(_name(host))

    def allow_proxy(self, host: str) -> None:
        address = literal_address(host)
        if address is not None:
            self.proxy_addresses.add(address)
        else:
            self.proxy_names.add(_name(host))

    def check_host(self, host: str) -> Refusal | None:
        """The decision for a URL's host before any lookup: only literal addresses are refused
        here; names are decided on the addresses they resolve to (``check_resolved``)."""
        address = literal_address(host)
        if address is None or address in self.seed_addresses:
            return None
        return refusal(address, self.allowed_networks)

    def check_resolved(self, host: str, address: Address | str) -> Refusal | None:
        """The decision for connecting to ``address``, which ``host`` resolved to."""
        if _name(host) in self.seed_names or literal_address(host) in self.seed_addresses:
            return None
        resolved = ip_address(address) if isinstance(address, str) else address
        found = refusal(resolved, self.allowed_networks)
        if found is None or literal_address(host) is not None:
            return found
        return Refusal(found.category, f"{host} resolves to {resolved}; {found.reason}")

    def check_connection(self, host: str, address: Address | str) -> Refusal | None:
        """The decision for a connection to ``address``, which ``host`` resolved to: a proxy's
        host is what the crawler connects to when it uses the proxy."""
        if _name(host) in self.proxy_names or literal_address(host) in self.proxy_addresses:
            return None
        return self.check_resolved(host, address)


def _name(host: str) -> str:
    return host.strip().lower().removesuffix(".")

"""Who the client is, and what it asked for, behind reverse proxies: pure, no I/O.

``X-Forwarded-For``, ``-Proto`` and ``-Host`` are headers anyone can send, so they are believed
only from a peer in ``CRAWLER_API_TRUSTED_PROXIES``. ``X-Forwarded-For`` is read from the right
(each proxy appends the address it received the request from): the client is the first address
that is not a trusted proxy, so a client cannot name itself by sending a forged header of its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from ipaddress import IPv6Address, ip_address

from crawler.guard.addresses import Address, Network, in_networks

UNKNOWN = "unknown"
"""The client of a connection without an address (a Unix socket)."""


def parse_address(value: str) -> Address | None:
    """An address as proxies write it: ``192.0.2.1``, ``192.0.2.1:4711``, ``2001:db8::1``,
    ``[2001:db8::1]:4711``; IPv4-mapped IPv6 as its IPv4 address; None for anything else."""
    value = value.strip()
    if value.startswith("["):
        value, closed, port = value[1:].partition("]")
        if not closed or port[:1] not in ("", ":"):
            return None
    elif value.count(":") == 1:
        value = value.partition(":")[0]
    try:
        address = ip_address(value)
    except ValueError:
        return None
    return address.ipv4_mapped or address if isinstance(address, IPv6Address) else address


def _entries(values: Iterable[str]) -> list[str]:
    """The comma-separated entries of a header given once or several times, in order."""
    return [entry.strip() for value in values for entry in value.split(",") if entry.strip()]


@dataclass(frozen=True, slots=True)
class TrustedProxies:
    networks: tuple[Network, ...] = ()

    def trusts(self, peer: str | None) -> bool:
        address = parse_address(peer) if peer else None
        return address is not None and in_networks(address, self.networks)

    def client(self, peer: str | None, forwarded_for: Iterable[str] = ()) -> str:
        """The client's address: the peer's, unless the peer is a trusted proxy."""
        current = parse_address(peer) if peer else None
        if current is None:
            return peer or UNKNOWN
        for entry in reversed(_entries(forwarded_for)):
            if not in_networks(current, self.networks):
                break
            hop = parse_address(entry)
            if hop is None:  # a trusted proxy wrote something else: go no further than it
                break
            current = hop
        return str(current)

    def forwarded(self, peer: str | None, values: Iterable[str]) -> str | None:
        """What the nearest proxy says (the last entry of ``X-Forwarded-Proto`` or ``-Host``),
        if the peer is a trusted proxy."""
        entries = _entries(values)
        return entries[-1] if entries and self.trusts(peer) else None

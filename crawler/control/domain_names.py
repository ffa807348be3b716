"""The stored domains a name given by an operator means (``scrapy audit``, ``scrapy export
--domain``): a domain as the crawl keys it (``host:port``) means itself, a host without its port
means the host on every port it was crawled at (``crawler.identity.named_domains``); a name that
means none gets a hint, the stored domains that start with its host."""

from __future__ import annotations

from dataclasses import dataclass

from crawler.identity import host_order, key_host, named_domains
from crawler.storage.backend import StorageBackend
from crawler.storage.domains import domains_starting_with

HINT_LISTED = 10
"""Stored domains a hint names at most."""


@dataclass(frozen=True, slots=True)
class NamedDomains:
    name: str
    """As given, trimmed and lowercase."""
    domains: list[str]
    """The stored domains it means."""
    nearby: list[str]
    """The stored domains that start with its host, in ``host_order``."""

    def hint(self) -> str:
        """What was stored near the name: the hint for a name that means no stored domain."""
        host = key_host(self.name)
        if not self.nearby:
            return f"no known domain starts with {host}"
        more = len(self.nearby) - HINT_LISTED
        listed = ", ".join(self.nearby[:HINT_LISTED]) + (f" and {more} more" if more > 0 else "")
        return f"known domains starting with {host}: {listed}"


async def look_up(backend: StorageBackend, table: str, name: str) -> NamedDomains:
    """The domains of ``table`` (``pages`` or ``request_log``) that ``name`` means."""
    name = name.strip().lower()
    nearby = sorted(await domains_starting_with(backend, table, key_host(name)), key=host_order)
    return NamedDomains(name, named_domains(name, nearby), nearby)

"""A DNS resolver that refuses the addresses the address guard refuses (``TWISTED_DNS_RESOLVER``).

The check is made on the address the connection will use, after every lookup, cached or not,
so a name that resolves to a public address once and to an internal one later (DNS rebinding)
cannot slip through. Scrapy builds the resolver once per process, from the process's settings,
and installs it on the reactor; the crawl's address guard shares its policy, so that the seeds'
hosts it allows are allowed here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

from scrapy.resolver import CachingThreadedResolver
from scrapy.settings import BaseSettings
from scrapy.utils.datatypes import LocalCache
from scrapy.utils.reactor import is_reactor_installed
from twisted.internet.base import ReactorBase
from twisted.internet.defer import Deferred
from twisted.internet.error import DNSLookupError

from crawler.guard.addresses import AddressPolicy, Refusal, parse_networks
from crawler.guard.proxies import configured_proxies, proxy_host
from crawler.setting_lists import list_setting


class GuardedResolver(CachingThreadedResolver):
    def __init__(self, reactor: ReactorBase, cache_size: int, timeout: float, policy: AddressPolicy):
        super().__init__(reactor, cache_size, timeout)
        self.policy = policy
        self.refusals: LocalCache[str, Refusal] = LocalCache(10_000)
        """The last refusal of each name, for the download handler to say why."""

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: ReactorBase) -> Self:
        settings = crawler.settings
        cache_size = settings.getint("DNSCACHE_SIZE") if settings.getbool("DNSCACHE_ENABLED") else 0
        return cls(reactor, cache_size, settings.getfloat("DNS_TIMEOUT"), address_policy(settings))

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> Deferred[str]:
        return super().getHostByName(name, timeout).addCallback(self._check, name)

    def lookup(self, name: str) -> Deferred[str]:
        """The address of ``name``, unchecked (cached as connections' lookups are)."""
        return super().getHostByName(name)

    def _check(self, address: str, name: str) -> str:
        refusal = self.policy.check_connection(name, address)
        if refusal is None:
            return address
        self.refusals[name] = refusal
        # The one failure Twisted's endpoint passes on quietly: "no results for hostname lookup".
        raise DNSLookupError(refusal.reason)


def address_policy(settings: BaseSettings) -> AddressPolicy:
    """The policy the settings give (``CRAWLER_ALLOWED_NETWORKS``, the proxies), before any seed
    is allowed; raises ValueError for a network that is not one."""
    policy = AddressPolicy(parse_networks(list_setting(settings, "CRAWLER_ALLOWED_NETWORKS")))
    for url in configured_proxies(settings):
        if host := proxy_host(url):
            policy.allow_proxy(host)
    return policy


def installed_resolver() -> GuardedResolver | None:
    """The guarded resolver of this process, if Scrapy installed one on the reactor."""
    if not is_reactor_installed():
        return None
    from twisted.internet import reactor  # the one Scrapy installed

    resolver = getattr(reactor, "resolver", None)
    return resolver if isinstance(resolver, GuardedResolver) else None

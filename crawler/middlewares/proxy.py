"""The crawl's HTTP proxy, with the address guard in front of it.

``CRAWLER_PROXY`` goes into every request's ``proxy`` meta (a request that names its own keeps
it); Scrapy's ``HttpProxyMiddleware`` then turns its credentials into ``Proxy-Authorization``, and
applies the ``http_proxy``/``https_proxy`` environment variables to the others. A proxy resolves
the names it is given itself, where the guarded resolver never sees them: so while any proxy is
configured, this middleware resolves each request's host name and refuses it as the resolver
would (a name that does not resolve here cannot be checked, and is refused too). Placed after the
address guard (literal addresses) and before the robots.txt middleware: a refused name gets no
robots.txt fetch either, and its pages are ``blocked_by_policy`` rows.
"""

from __future__ import annotations

from typing import Self

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred
from twisted.internet.error import DNSLookupError

from crawler.guard.addresses import Refusal, literal_address
from crawler.guard.blocked import refuse
from crawler.guard.checker import AddressGuard
from crawler.guard.proxies import configured_proxies
from crawler.guard.resolver import installed_resolver
from crawler.services import CrawlServices


class ProxyMiddleware:
    def __init__(self, crawler: Crawler, guard: AddressGuard, proxy: str | None):
        self.stats = crawler.stats
        self.guard = guard
        self.proxy = proxy

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not configured_proxies(crawler.settings):
            raise NotConfigured
        guard = CrawlServices.of(crawler).make_guard()
        return cls(crawler, guard, crawler.settings.get("CRAWLER_PROXY") or None)

    async def process_request(self, request: Request) -> None:
        if self.proxy is not None and "proxy" not in request.meta:
            request.meta["proxy"] = self.proxy
        host = urlparse_cached(request).hostname
        if not host or literal_address(host) is not None:
            return  # literal addresses: the address guard's middleware has decided
        try:
            address = await maybe_deferred_to_future(_lookup(host))
        except DNSLookupError as exc:
            if self.guard.seeded(request):
                return  # a trusted seed: the proxy may know names this machine does not
            refusal = Refusal("unresolved", f"{host} cannot be checked before the proxy gets it: {exc}")
        else:
            refusal = self.guard.name_refusal(request, address)
        if refusal is not None:
            raise refuse(self.stats, request, refusal)


def _lookup(host: str) -> Deferred[str]:
    resolver = installed_resolver()
    if resolver is not None:
        return resolver.lookup(host)
    from twisted.internet import reactor  # the one Scrapy installed

    return reactor.resolve(host)

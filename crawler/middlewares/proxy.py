"""The crawl's HTTP proxy, with the address guard in front of it.

``CRAWLER_PROXY`` goes into every request's ``proxy`` meta (a request that names its own keeps
it, a host of ``CRAWLER_NO_PROXY`` goes direct); Scrapy's ``HttpProxyMiddleware`` then turns its
credentials into ``Proxy-Authorization``, and applies the ``http_proxy``/``https_proxy``
environment variables to the others. A proxy that refuses the crawler's credentials (407) ends the
job at once (``failed_proxy_refused``): every request would meet the same answer. A proxy resolves
the names it is given itself, where the guarded resolver never sees them: so while any proxy is
configured, this middleware resolves each request's host name and refuses it as the resolver
would (a name that does not resolve here cannot be checked, and is refused too). Placed after the
address guard (literal addresses) and before the robots.txt middleware: a refused name gets no
robots.txt fetch either, and its pages are ``blocked_by_policy`` rows.
"""

from __future__ import annotations

import logging
from typing import Self

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred
from twisted.internet.error import DNSLookupError

from crawler.exceptions import ProxyRefused
from crawler.guard.addresses import Refusal, literal_address
from crawler.guard.blocked import refuse
from crawler.guard.checker import AddressGuard
from crawler.guard.proxies import bypasses_proxy, configured_proxies, shown_proxy
from crawler.guard.resolver import installed_resolver
from crawler.services import CrawlServices
from crawler.setting_lists import list_setting

logger = logging.getLogger(__name__)

REASON_PROXY_REFUSED = "failed_proxy_refused"


class ProxyMiddleware:
    def __init__(self, crawler: Crawler, guard: AddressGuard, proxy: str | None, no_proxy: list[str]):
        self.crawler = crawler
        self.stats = crawler.stats
        self.guard = guard
        self.proxy = proxy
        self.no_proxy = no_proxy
        self.closing = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not configured_proxies(crawler.settings):
            raise NotConfigured
        guard = CrawlServices.of(crawler).make_guard()
        settings = crawler.settings
        return cls(crawler, guard, settings.get("CRAWLER_PROXY") or None, list_setting(settings, "CRAWLER_NO_PROXY"))

    async def process_request(self, request: Request) -> None:
        host = urlparse_cached(request).hostname
        if self.proxy is not None and "proxy" not in request.meta and not bypasses_proxy(host or "", self.no_proxy):
            request.meta["proxy"] = self.proxy
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

    def process_response(self, request: Request, response: Response) -> Response:
        proxy = request.meta.get("proxy")
        if response.status != 407 or not proxy:
            return response
        why = (
            f"the proxy {shown_proxy(proxy)} refused the crawler's credentials (HTTP 407): "
            "check the user name and password of CRAWLER_PROXY or http_proxy"
        )
        if not self.closing and self.crawler.engine is not None:
            self.closing = True
            logger.error("Closing the job (%s): %s", REASON_PROXY_REFUSED, why)
            self.stats.set_value("job/close_cause", why)
            deferred_from_coro(self.crawler.engine.close_spider_async(reason=REASON_PROXY_REFUSED))
        raise ProxyRefused(why)


def _lookup(host: str) -> Deferred[str]:
    resolver = installed_resolver()
    if resolver is not None:
        return resolver.lookup(host)
    from twisted.internet import reactor  # the one Scrapy installed

    return reactor.resolve(host)

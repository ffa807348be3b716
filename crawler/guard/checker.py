"""The crawl's address checks on requests: a literal address refused before anything is sent (a
name is refused at connection time, by the resolver), the trusted seeds' hosts allowed whatever
their address (in a shared crawl, those of every process, found in the crawl's scope), as are
``CRAWLER_ALLOWED_NETWORKS``. URLs seeded through the API are not trusted: they pass the guard
as links do."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.utils.httpobj import urlparse_cached

from crawler.guard.addresses import AddressPolicy, Refusal
from crawler.scope.scope_local import Scope


class AddressGuard:
    def __init__(self, policy: AddressPolicy, scope: Callable[[], Scope | None]):
        """``scope``: the crawl's scope, where the seeds are (None before the spider made it)."""
        self.policy = policy
        self.scope = scope

    def allow_seed(self, url: str) -> None:
        host = urlsplit(url).hostname
        if host:
            self.policy.allow_seed(host)

    def seeded(self, request: Request) -> bool:
        """Whether the request's host is a trusted seed's, of this process or (shared)
        another's; if so it is allowed from now on."""
        scope = self.scope()
        if scope is None or not scope.trusted(request.url):
            return False
        self.allow_seed(request.url)
        return True

    def name_refusal(self, request: Request, address: str) -> Refusal | None:
        """Why the request's host name, which resolved to ``address``, must not be reached (the
        check a proxy would otherwise skip, as it resolves names itself)."""
        host = urlparse_cached(request).hostname or ""
        refusal = self.policy.check_resolved(host, address)
        return None if refusal is None or self.seeded(request) else refusal

    def refusal(self, request: Request) -> Refusal | None:
        """Why the request's host must not be reached, if it is a literal address refused."""
        host = urlparse_cached(request).hostname
        refusal = self.policy.check_host(host) if host else None
        return None if refusal is None or self.seeded(request) else refusal

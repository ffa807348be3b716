"""Redirects (HTTP 3xx and meta refresh) that pass the checks a link passes, at every hop.

Scrapy's ``RedirectMiddleware`` and ``MetaRefreshMiddleware``, replaced at their places, with
what they do not check: the target must be in the crawl's scope (robots.txt
fetches excepted: RFC 9309 follows them anywhere) and its address allowed by the address guard.
A refused redirect is a ``blocked_by_policy`` row of the URL that redirected, whose body is
never fetched. A loop or a chain longer than ``REDIRECT_MAX_TIMES`` is an error row that shows
the chain.
"""

from __future__ import annotations

from scrapy import Request
from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware, RedirectMiddleware
from scrapy.http import HtmlResponse, Response
from w3lib.encoding import html_to_unicode
from w3lib.html import get_meta_refresh

from crawler.compat import CheckedRedirectBase, meta_refresh_ignore_tags
from crawler.exceptions import RedirectFailed, RedirectRefused
from crawler.guard.blocked import refuse
from crawler.services import CrawlServices


class CheckedRedirects(CheckedRedirectBase):
    def check_redirect(self, redirected: Request, request: Request) -> None:
        chain = [*request.meta.get("redirect_urls", ()), request.url]
        if redirected.url in chain:
            raise RedirectFailed(f"redirect loop: {_shown(chain, redirected.url)}")
        hops = request.meta.get("redirect_times", 0) + 1
        if not request.meta.get("redirect_ttl", self.max_redirect_times) or hops > self.max_redirect_times:
            raise RedirectFailed(f"more than {hops - 1} redirects: {_shown(chain, redirected.url)}")
        self._check(redirected, request)

    def _check(self, redirected: Request, request: Request) -> None:
        services = CrawlServices.of(self.crawler)
        scope = services.scope
        if scope is not None and not request.meta.get("dont_obey_robotstxt") and redirected.url not in scope:
            self.crawler.stats.inc_value("redirect/out_of_scope")
            raise RedirectRefused(f"redirect out of scope: {request.url} -> {redirected.url}")
        refusal = services.guard.refusal(redirected) if services.guard is not None else None
        if refusal is not None:
            blocked = refuse(self.crawler.stats, redirected, refusal)
            raise RedirectRefused(f"redirect to {redirected.url}: {blocked}")


def _shown(chain: list[str], target: str, most: int = 6) -> str:
    urls = [*chain, target]
    if len(urls) > most:  # a long chain shows its ends
        urls = [*urls[:2], "…", *urls[-(most - 3) :]]
    return " -> ".join(urls)


class CheckedRedirectMiddleware(CheckedRedirects, RedirectMiddleware):
    pass


class CheckedMetaRefreshMiddleware(CheckedRedirects, MetaRefreshMiddleware):
    def process_response(self, request: Request, response: Response) -> Request | Response:
        # Scrapy looks for the refresh in the first 4096 characters of ``response.text``, which
        # decodes the whole body first; the same look at those characters alone says whether
        # there is one, and most pages have none. (A page that declares no encoding is still
        # decoded whole, by Scrapy, to guess it.)
        if isinstance(response, HtmlResponse):
            head = _head(response)
            if (
                head is not None
                and get_meta_refresh(head, response.url, response.encoding, meta_refresh_ignore_tags(self))[1] is None
            ):
                return response
        return super().process_response(request, response)


_HEAD_CHARACTERS = 4096
"""As many as Scrapy's ``get_meta_refresh`` reads."""
_HEAD_BYTES = 4 * _HEAD_CHARACTERS + 4
"""Enough for them in UTF-8, UTF-16 and UTF-32, byte order mark included."""


def _head(response: HtmlResponse) -> str | None:
    """The first 4096 characters of ``response.text``, decoded alone; None where the bytes
    read hold fewer (an encoding of more than 4 bytes a character, as ISO-2022-JP can be)."""
    body = response.body
    head = html_to_unicode(f"charset={response.encoding}", body[:_HEAD_BYTES])[1]
    if len(head) < _HEAD_CHARACTERS and len(body) > _HEAD_BYTES:
        return None
    return head[:_HEAD_CHARACTERS]

"""The soft-404 probe: one request per site for a path no site has, whose answer, when it is a
page (200) rather than a 404, is what the site says of a missing page. Its fingerprint goes into
the site's index under the probe's URL, so that later pages that say the same are soft 404s.
The path is the same in every process of a crawl, and each site is probed once: in a shared
crawl the first process to claim the site (``HSETNX``, through the link) probes it."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from crawler.redis.link import RedisLink


def probe_path(crawl_id: str) -> str:
    """A path of the crawl's own, which no site links to."""
    return "/" + hashlib.sha256(f"soft-404 probe of {crawl_id}".encode()).hexdigest()[:24] + ".html"


class SoftNotFoundProbes:
    def __init__(self, crawl_id: str):
        self.path = probe_path(crawl_id)
        self.probed: set[str] = set()

    def url(self, page_url: str) -> str:
        """The probe of ``page_url``'s site."""
        parts = urlsplit(page_url)
        return f"{parts.scheme}://{parts.netloc}{self.path}"

    def is_probe(self, url: str) -> bool:
        return urlsplit(url).path == self.path

    def claim(self, site: str, probe: Callable[[], None]) -> None:
        """Call ``probe`` if ``site`` has not been probed by the crawl yet."""
        if site not in self.probed:
            self.probed.add(site)
            probe()


class RedisSoftNotFoundProbes(SoftNotFoundProbes):
    def __init__(self, crawl_id: str, link: RedisLink, key: str):
        from crawler.redis.link import Op  # a shared crawl's only: redis-py

        super().__init__(crawl_id)
        self._op = Op
        self.link = link
        self.key = key

    def claim(self, site: str, probe: Callable[[], None]) -> None:
        if site in self.probed:
            return
        self.probed.add(site)
        key = self.key
        self.link.submit(
            self._op(send=lambda pipe: pipe.hsetnx(key, site, 1), done=lambda first: probe() if first else None)
        )

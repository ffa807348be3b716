"""Which discovered URLs a crawl follows: by default the seed's own site."""

from __future__ import annotations

from collections.abc import Iterable

from crawler.identity import host_of, site_of

SCOPES = ("host", "site", "any")


class Scope:
    """``host``: exactly the seeds' hosts; ``site``: also ``www.`` variants; ``any``: all.

    A seed is trusted (given on the command line, in a seeds file or by ``scrapy seed``: its host
    is allowed whatever its address) or not (seeded through the API: in scope, but its host must
    pass the address guard as a link's does)."""

    def __init__(self, mode: str, seeds: Iterable[str] = ()):
        if mode not in SCOPES:
            raise ValueError(f"CRAWLER_SCOPE must be one of {', '.join(SCOPES)}, got {mode!r}")
        self.mode = mode
        self._allowed: set[str] = set()
        self._trusted: set[str] = set()
        for seed in seeds:
            self.add_seed(seed)

    def add_seed(self, url: str, trusted: bool = True) -> None:
        self._allowed.add(self._key(url))
        if trusted:
            self._trusted.add(self._key(url))

    def __contains__(self, url: str) -> bool:
        return self.mode == "any" or self.seeded(url)

    def seeded(self, url: str) -> bool:
        """Whether ``url`` is on a seed's host (its site, in the ``site`` mode)."""
        return self._key(url) in self._allowed

    def trusted(self, url: str) -> bool:
        """Whether ``url`` is on a trusted seed's host (its site, in the ``site`` mode)."""
        return self._key(url) in self._trusted

    def refresh(self) -> None:
        """Bring the scope up to date with seeds other processes added (a shared crawl's)."""

    def _key(self, url: str) -> str:
        return site_of(url) if self.mode == "site" else host_of(url)

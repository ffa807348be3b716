"""Which discovered URLs a crawl follows: by default the seed's own site."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

SCOPES = ("host", "site", "any")


# An absolute URL as the normal form writes it: its authority ends at the first "/", "?" or "#".
_NORMAL_AUTHORITY = re.compile(r"[a-z][a-z0-9+.-]*://([^/?#\\\s\[\]]*)[/?#]")


def host_of(url: str) -> str:
    """The host, with a non-default port if any, lowercase."""
    # Called for every new link: reading a normal URL's authority costs a tenth of urlsplit.
    # (Not for non-ASCII: urlsplit refuses hosts that NFKC normalization would change.)
    normal = _NORMAL_AUTHORITY.match(url) if url.isascii() else None
    netloc = normal.group(1) if normal else urlsplit(url).netloc
    return netloc.rpartition("@")[2].lower()


def site_of(url: str) -> str:
    """The host without a leading ``www.``, with a non-default port if any."""
    netloc = host_of(url)
    return netloc[4:] if netloc.startswith("www.") else netloc


class Scope:
    """``host``: exactly the seeds' hosts; ``site``: also ``www.`` variants; ``any``: all."""

    def __init__(self, mode: str, seeds: Iterable[str] = ()):
        if mode not in SCOPES:
            raise ValueError(f"CRAWLER_SCOPE must be one of {', '.join(SCOPES)}, got {mode!r}")
        self.mode = mode
        self._allowed: set[str] = set()
        for seed in seeds:
            self.add_seed(seed)

    def add_seed(self, url: str) -> None:
        self._allowed.add(self._key(url))

    def __contains__(self, url: str) -> bool:
        return self.mode == "any" or self.seeded(url)

    def seeded(self, url: str) -> bool:
        """Whether ``url`` is on a seed's host (its site, in the ``site`` mode)."""
        return self._key(url) in self._allowed

    def _key(self, url: str) -> str:
        return site_of(url) if self.mode == "site" else host_of(url)

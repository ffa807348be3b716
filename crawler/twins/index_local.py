"""Each site's fingerprints in the process: found by their blocks (``simhash.blocks``), so a
look-up reads a few short lists, not every page of the site."""

from __future__ import annotations

from dataclasses import dataclass, field

from crawler.twins.simhash import blocks, distance


@dataclass(frozen=True, slots=True)
class Twin:
    """The page a new page says the same as: the first one with a fingerprint close enough."""

    url: str
    distance: int


class TwinIndex:
    """``max_distance``: the most bits two twins' fingerprints differ by; ``capacity``: the
    fingerprints kept per site (past it, pages are still compared with those kept)."""

    def __init__(self, max_distance: int, capacity: int):
        self.max_distance = max_distance
        self.capacity = capacity
        self._sites: dict[str, _Site] = {}

    async def find_or_add(self, site: str, fingerprint: int, url: str) -> Twin | None:
        """The closest page of ``site`` other than ``url`` within ``max_distance`` of
        ``fingerprint``; if there is none, ``url`` is kept as the page with that fingerprint."""
        return self.match(site, fingerprint, url)

    def match(self, site: str, fingerprint: int, url: str) -> Twin | None:
        index = self._sites.setdefault(site, _Site())
        keys = blocks(fingerprint, self.max_distance + 1)
        best: Twin | None = None
        for key in keys:
            for other in index.buckets.get(key, ()):
                apart = distance(fingerprint, other)
                if apart <= self.max_distance and (best is None or apart < best.distance):
                    other_url = index.urls[other]
                    if other_url != url:  # a page fetched again is not its own twin
                        best = Twin(other_url, apart)
        if best is None and fingerprint not in index.urls and len(index.urls) < self.capacity:
            index.urls[fingerprint] = url
            for key in keys:
                index.buckets.setdefault(key, []).append(fingerprint)
        return best


@dataclass(slots=True)
class _Site:
    urls: dict[int, str] = field(default_factory=dict)
    """Fingerprint -> the URL of the first page that had it."""
    buckets: dict[int, list[int]] = field(default_factory=dict)
    """A block (tagged with its place) -> the fingerprints that have it."""

"""Where a seed's sitemaps are, and what kind of seed it is; no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from urllib.parse import urljoin, urlsplit

_SITEMAP_SUFFIXES = (".xml", ".xml.gz", ".txt", ".txt.gz", ".gz", ".rss", ".atom")


class SeedKind(Enum):
    ROBOTS = "robots"
    SITEMAP = "sitemap"
    PAGE = "page"


def seed_kind(url: str) -> SeedKind:
    path = urlsplit(url).path.lower()
    if path == "/robots.txt":
        return SeedKind.ROBOTS
    name = path.rsplit("/", 1)[-1]
    if "sitemap" in name or (name.endswith(_SITEMAP_SUFFIXES) and name != ""):
        return SeedKind.SITEMAP
    return SeedKind.PAGE


def robots_url(url: str) -> str:
    return urljoin(url, "/robots.txt")


def fallback_sitemap_urls(url: str, paths: list[str]) -> list[str]:
    return [urljoin(url, path) for path in paths]


class Phase(Enum):
    ROBOTS = "robots"
    """Sitemaps listed in robots.txt."""
    FALLBACK = "fallback"
    """The well-known sitemap paths."""
    PAGE = "page"
    """No sitemap: the seed itself is crawled."""


@dataclass(slots=True)
class Discovery:
    """Sitemap discovery for one seed: how many sitemap fetches are outstanding and whether
    any listed a URL, which decides when to try the next phase."""

    seed: str
    phase: Phase = Phase.ROBOTS
    pending: int = 0
    found: int = 0
    tried: list[str] = field(default_factory=list)

    def started(self, sitemap_url: str) -> None:
        self.pending += 1
        self.tried.append(sitemap_url)

    def finished(self, entries: int) -> Phase | None:
        """Account for one sitemap; the next phase to start if this one has failed."""
        self.pending -= 1
        self.found += entries
        if self.pending > 0 or self.found > 0:
            return None
        return self.advance()

    def advance(self) -> Phase | None:
        if self.phase is Phase.ROBOTS:
            self.phase = Phase.FALLBACK
        elif self.phase is Phase.FALLBACK:
            self.phase = Phase.PAGE
        else:
            return None
        return self.phase

"""What each site's URL patterns (``rules.url_pattern``) have produced, in the process: URLs
queued, pages kept, twins found; and the two rules those counts make. A pattern that has given
``stop_after_twins`` twins, more than pages of its own, is not followed any further (session ids
in the path, soft 404s); a pattern may queue at most ``max_urls`` URLs per site (calendars)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class PatternCount:
    queued: int = 0
    pages: int = 0
    """Pages fetched from the pattern that were no twin."""
    twins: int = 0


class PatternCounts:
    """Each limit 0 turns its rule off."""

    def __init__(self, max_urls: int, stop_after_twins: int):
        self.max_urls = max_urls
        self.stop_after_twins = stop_after_twins
        self.counts: dict[tuple[str, str], PatternCount] = {}

    def refusal(self, site: str, pattern: str) -> str | None:
        """Why a new URL of ``pattern`` on ``site`` is not queued, or None."""
        count = self.counts.get((site, pattern))
        if count is None:
            return None
        if self.stop_after_twins and count.twins >= self.stop_after_twins and count.twins > count.pages:
            return f"trap: {pattern} gave {count.twins} twins and {count.pages} other pages"
        if self.max_urls and count.queued >= self.max_urls:
            return f"trap: {pattern} queued {count.queued} URLs already (at most {self.max_urls})"
        return None

    def queued(self, site: str, pattern: str) -> None:
        self._count(site, pattern).queued += 1

    def judged(self, site: str, pattern: str, twin: bool) -> None:
        """A page of ``pattern`` was fetched: a twin (or soft 404), or a page of its own."""
        count = self._count(site, pattern)
        if twin:
            count.twins += 1
        else:
            count.pages += 1

    def _count(self, site: str, pattern: str) -> PatternCount:
        count = self.counts.get((site, pattern))
        if count is None:
            count = self.counts[site, pattern] = PatternCount()
        return count

"""The traps of one crawl: a discovered URL is judged by its own shape (``rules``) and by what
its pattern has produced on its site (``patterns_local``, ``patterns_redis``)."""

from __future__ import annotations

from crawler.identity import site_of
from crawler.traps.patterns_local import PatternCounts
from crawler.traps.url_shapes import UrlRules, url_pattern


class TrapGuard:
    def __init__(self, rules: UrlRules, counts: PatternCounts):
        self.rules = rules
        self.counts = counts

    def refusal(self, url: str) -> str | None:
        """Why the discovered ``url`` is not queued, or None."""
        return self.rules.refusal(url) or self.pattern_refusal(url)

    def pattern_refusal(self, url: str) -> str | None:
        """Why a queued ``url`` is not fetched now that its pattern gave what it gave, or None."""
        pattern = url_pattern(url)
        return None if pattern is None else self.counts.refusal(site_of(url), pattern)

    def queued(self, url: str) -> None:
        pattern = url_pattern(url)
        if pattern is not None:
            self.counts.queued(site_of(url), pattern)

    def judged(self, url: str, twin: bool) -> None:
        """The page at ``url`` was fetched: a twin of another page (or a soft 404), or not."""
        pattern = url_pattern(url)
        if pattern is not None:
            self.counts.judged(site_of(url), pattern, twin)

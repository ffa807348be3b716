"""Crawl priorities after seed 002: seeds, home pages and shallow pages first (3), content
pages next (2), paginated, archive and deep pages last (1). Within a level, shallower first."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

HIGH, MEDIUM, LOW = 3, 2, 1
SHALLOW_DEPTH = 2
DEEP_DEPTH = 5
_LOW_VALUE_PATH = re.compile(
    r"/(?:page|archive|archives|tag|tags|category|author|feed|search|\d{4}/\d{2})(?:/|$)", re.I
)
_PAGINATION_QUERY = re.compile(r"(?:^|&)(?:page|p|offset|start|sort|order)=", re.I)


def priority_level(url: str, depth: int, *, seed: bool = False) -> int:
    if seed or depth <= SHALLOW_DEPTH:
        return HIGH
    parts = urlsplit(url)
    if parts.path in ("", "/"):
        return HIGH
    if depth > DEEP_DEPTH or _LOW_VALUE_PATH.search(parts.path) or _PAGINATION_QUERY.search(parts.query):
        return LOW
    return MEDIUM


def request_priority(url: str, depth: int, *, seed: bool = False) -> int:
    """Scrapy request priority (higher first): the level, then shallower first."""
    return priority_level(url, depth, seed=seed) * 100 - min(depth, 99)

"""The id of a crawl: the key prefix of a shared crawl in Redis and the name of its run lock.

It is ``-a crawl=NAME`` (or ``CRAWLER_CRAWL_ID``); by default the spider's name and a digest of
its seeds, so that the same command started N times joins one shared crawl, or is one run of a
crawl at a time, and crawls of other seeds never meet.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def crawl_id(spider_name: str, seeds: Iterable[str], explicit: str | None = None) -> str:
    if explicit:
        return _UNSAFE.sub("_", explicit)
    digest = hashlib.sha1("\n".join(sorted(seeds)).encode()).hexdigest()[:12]
    return f"{spider_name}-{digest}"

"""The rules a discovered URL is judged by before it is queued, from the URL alone: repeating
path segments, too many segments or query parameters; and the pattern a URL belongs to, which
the counts of ``patterns_local`` follow. Pure functions, no state."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

LONGEST_REPEATED_RUN = 3
"""Runs of up to this many segments are looked for (``/a/b/c/a/b/c/a/b/c``)."""
GENERATED_LENGTH = 24
"""A segment this long or longer counts as generated (a token) even without a digit."""


@dataclass(frozen=True, slots=True)
class UrlRules:
    """Each limit 0 turns its rule off."""

    max_segment_repeats: int
    max_path_segments: int
    max_query_params: int

    def refusal(self, url: str) -> str | None:
        """Why ``url`` is not followed, or None."""
        parts = urlsplit(url)
        segments = path_segments(parts.path)
        if self.max_path_segments and len(segments) > self.max_path_segments:
            return f"trap: {len(segments)} path segments (more than {self.max_path_segments})"
        params = [param for param in parts.query.split("&") if param]
        if self.max_query_params and len(params) > self.max_query_params:
            return f"trap: {len(params)} query parameters (more than {self.max_query_params})"
        if self.max_segment_repeats:
            run, times = repeated_run(segments)
            if times > self.max_segment_repeats:
                return f"trap: path segments '{'/'.join(run)}' repeat {times} times in a row (more than {self.max_segment_repeats})"
        return None


def path_segments(path: str) -> list[str]:
    return [segment for segment in path.split("/") if segment]


def repeated_run(segments: list[str]) -> tuple[list[str], int]:
    """The run of consecutive segments repeated most often in a row, and how often."""
    best: tuple[list[str], int] = ([], 0)
    for length in range(1, LONGEST_REPEATED_RUN + 1):
        for start in range(len(segments) - length + 1):
            run = segments[start : start + length]
            times = 1
            while segments[start + times * length : start + (times + 1) * length] == run:
                times += 1
            if times > best[1]:
                best = (run, times)
    return best


@lru_cache(maxsize=16_384)  # a URL's pattern is asked when it is found, queued, sent and judged
def url_pattern(url: str) -> str | None:
    """The URLs a site may generate without end have one pattern: the path up to its first
    generated segment (one with a digit, or a long token), that segment as ``*``; for a path
    with none, the path and the names of the query's parameters. ``/s/a81f/about`` and
    ``/s/c2d9/news`` are ``/s/*``; ``/calendar/2031/05`` is ``/calendar/*``; ``/list?page=7`` is
    ``/list?page=*``. A path with neither is one URL, of no pattern (None): nothing to count."""
    parts = urlsplit(url)
    kept = []
    for segment in path_segments(parts.path):
        if is_generated(segment):
            return "/" + "/".join([*kept, "*"])
        kept.append(segment)
    names = sorted({param.partition("=")[0] for param in parts.query.split("&") if param})
    if not names:
        return None
    return "/" + "/".join(kept) + "?" + "&".join(f"{name}=*" for name in names)


def is_generated(segment: str) -> bool:
    return len(segment) >= GENERATED_LENGTH or any(map(str.isdigit, segment))

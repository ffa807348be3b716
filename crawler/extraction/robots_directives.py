"""Page-level robots directives from ``<meta name="robots">`` and ``X-Robots-Tag``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RobotsDirectives:
    noindex: bool = False
    nofollow: bool = False

    def __or__(self, other: RobotsDirectives) -> RobotsDirectives:
        return RobotsDirectives(self.noindex or other.noindex, self.nofollow or other.nofollow)


NONE = RobotsDirectives()


def parse_robots_directives(values: Iterable[str], user_agents: Iterable[str] = ()) -> RobotsDirectives:
    """Directives that apply to us from meta contents or header values.

    A value is either general (``noindex, nofollow``) or scoped to one agent
    (``otherbot: noindex``); scoped values count only for ``user_agents``.
    """
    agents = {a.lower() for a in user_agents}
    noindex = nofollow = False
    for value in values:
        scope, sep, rest = value.partition(":")
        if sep and scope.strip().lower() not in _DIRECTIVE_WORDS and " " not in scope.strip():
            if scope.strip().lower() not in agents:
                continue
            value = rest
        words = {w.strip().lower() for w in value.split(",")}
        if "none" in words:
            noindex = nofollow = True
        noindex = noindex or "noindex" in words
        nofollow = nofollow or "nofollow" in words
    return RobotsDirectives(noindex, nofollow)


# Directives that may carry a value after a colon (``unavailable_after: …``): not agent names.
_DIRECTIVE_WORDS = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})

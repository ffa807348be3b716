"""robots.txt rules for one product token: Protego parses and decides, with a thin layer that
corrects where it departs from RFC 9309 and Google's reference parser.

Corrections, made on the text before Protego reads it and in choosing the group:
- only ``User-agent``, ``Allow``, ``Disallow`` and ``Sitemap`` lines reach Protego, so that a
  line that is not a rule (``Crawl-delay``, an unknown line) between two ``User-agent`` lines
  does not end the group;
- ``Crawl-delay`` is read here and belongs to the agents named just before it, as
  crawler-commons reads it (the extension is outside RFC 9309);
- a ``User-agent`` value is its product token, the leading run of letters, ``_`` and ``-``
  (``Foo Bar`` is ``foo``);
- the group is the one whose product token equals ours, case-insensitively, else ``*``:
  Protego would also pick a group whose token is a prefix of ours (``crawl`` for ``crawler``).

The rule that decided is read from the same ordered rules Protego evaluates, so it always
agrees with the verdict.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from protego import Protego

from crawler.compat import matched_rule, protego_groups

_UA_FIELDS = frozenset({"user-agent", "useragent", "user agent"})
_RULE_FIELDS = frozenset({"allow", "disallow"})
_SITE_WIDE_FIELDS = frozenset({"sitemap", "sitemaps", "site-map", "host"})
_CRAWL_DELAY_FIELDS = frozenset({"crawl-delay", "crawl delay"})
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_PRODUCT_TOKEN = re.compile(r"[A-Za-z_-]+")
MAX_BYTES = 500 * 1024


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    rule: str | None
    """The rule that decided (``Disallow: /private``), or why there was none."""


@dataclass(slots=True)
class RobotsRules:
    user_agent: str
    parser: Protego | None = None
    allow_all: bool = True
    reason: str = ""
    """Why these rules, when they do not come from a parsed file (``HTTP 404: allow all``)."""
    crawl_delay: float | None = None
    sitemaps: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, body: bytes | str, user_agent: str) -> RobotsRules:
        """Rules from a robots.txt body (the first 500 KiB are read, as RFC 9309 allows)."""
        if isinstance(body, bytes):
            body = body[:MAX_BYTES].decode("utf-8", errors="replace")
        else:
            body = body[:MAX_BYTES]
        text, delays = _regroup(body)
        parser = Protego.parse(text)
        # The crawler's own agent is matched as given, as Google's parser does: "Foo Bar" is
        # not the product token "foo".
        rules = cls(user_agent.strip().lower(), parser, allow_all=False)
        token = rules.user_agent if rules.user_agent in protego_groups(parser) or rules.user_agent in delays else "*"
        rules.crawl_delay = delays.get(token)
        rules.sitemaps = list(dict.fromkeys(parser.sitemaps))
        return rules

    @classmethod
    def allowing_all(cls, user_agent: str, reason: str) -> RobotsRules:
        return cls(user_agent.strip().lower(), None, allow_all=True, reason=reason)

    @classmethod
    def disallowing_all(cls, user_agent: str, reason: str) -> RobotsRules:
        return cls(user_agent.strip().lower(), None, allow_all=False, reason=reason)

    def decide(self, url: str) -> Decision:
        if self.parser is None:
            return Decision(self.allow_all, self.reason)
        if _is_robots_txt(url):
            return Decision(True, "robots.txt itself")
        rule_set = self._rule_set()
        if rule_set is None:
            return Decision(True, "no group for this user agent")
        url = _decode_query_delimiters(url)
        try:
            allowed = rule_set.can_fetch(url)
        except ValueError:  # Protego cannot split it (``http://[x``): nothing could fetch it either
            return Decision(False, "unparsable URL")
        return Decision(allowed, matched_rule(rule_set, url) or "no rule matched")

    def _rule_set(self):
        groups = protego_groups(self.parser) if self.parser is not None else {}
        return groups.get(self.user_agent) or groups.get("*")


_ESCAPED_DELIMITER = re.compile(r"%(3A|2F|3F|40)", re.IGNORECASE)


def _decode_query_delimiters(url: str) -> str:
    """RFC 9309 §2.2.2 compares paths with reserved characters percent-encoded on both sides, so
    ``?baz=https://x`` in a rule matches ``?baz=https%3A%2F%2Fx``. Protego leaves rules as
    written; in the query, where these delimiters need no escaping, the URL's escapes of
    ``:/?@`` are decoded instead."""
    base, sep, query = url.partition("?")
    return base + sep + _ESCAPED_DELIMITER.sub(lambda m: bytes.fromhex(m.group(1)).decode(), query) if sep else url


def _is_robots_txt(url: str) -> bool:
    path = url.split("://", 1)[-1].partition("/")[2]
    return "/" + path.split("?", 1)[0] == "/robots.txt"


_KNOWN_FIELDS = _UA_FIELDS | _RULE_FIELDS | _SITE_WIDE_FIELDS | _CRAWL_DELAY_FIELDS


def _field(line: str) -> tuple[str, str] | None:
    """A line's field (lowercased) and value; ``Disallow /x`` without a colon is read too, as
    Protego and Google read it."""
    content = line.split("#", 1)[0].strip()
    if ":" in content:
        name, value = content.split(":", 1)
        if name.strip().lower() in _KNOWN_FIELDS:
            return name.strip().lower(), value.strip()
    words = content.split()
    for count in (1, 2):
        name = " ".join(words[:count]).lower()
        if name in _KNOWN_FIELDS:
            return name, " ".join(words[count:])
    return None


def product_token(value: str) -> str:
    """The product token of a user agent: ``*``, or the leading letters, ``_`` and ``-``."""
    if value.startswith("*"):
        return "*"
    match = _PRODUCT_TOKEN.match(value)
    return match.group().lower() if match else ""


def _regroup(text: str) -> tuple[str, dict[str, float]]:
    """The text Protego reads (see the module docstring), and the crawl delay of each agent."""
    out: list[str] = []
    delays: dict[str, float] = {}
    agents: list[str] = []  # the agents named since the last rule line
    after_rule = True
    for line in text.splitlines():
        parsed = _field(line)
        if parsed is None:
            continue
        name, value = parsed
        if name in _UA_FIELDS:
            token = product_token(value)
            if after_rule:
                agents = []
            agents.append(token)
            after_rule = False
            out.append(f"User-agent: {token}")
        elif name in _RULE_FIELDS:
            after_rule = True
            out.append(line)
        elif name in _SITE_WIDE_FIELDS:
            out.append(line)
        elif name in _CRAWL_DELAY_FIELDS:
            delay = _delay(value)
            for agent in agents:
                if delay is not None and agent:
                    delays.setdefault(agent, delay)
    return "\n".join(out), delays


def _delay(value: str) -> float | None:
    match = _NUMBER.match(value)
    if not match:
        return None
    delay = float(match.group())
    return delay if math.isfinite(delay) else None

"""Links of a page to normal URLs, the same as ``normalize(join(base, href))`` but cheaper.

Links are resolved as browsers resolve them (``whatwg``). Pages of one site repeat the same
links (navigation, index entries, the same page with many fragments), so answers are kept in a
bounded cache keyed by the part of the base URL the answer depends on, and a link seen on a
sibling page is not resolved again. On an http(s) page, as the URL Standard reads a link
(``\\`` is ``/``; tabs and newlines are removed, so a key is only taken where there are none
that could matter):

- the fragment never matters (the normal form drops it), so it is cut off first (``a.html#x``
  and ``a.html#y`` are one link);
- ``/path`` depends only on the base's scheme, user and host;
- ``//host/path``, and ``scheme://host/path``, only on the base's scheme (``http:`` followed by
  two slashes is absolute on an http page too);
- a relative path (``a.html``, ``../b/``) only on the base's folder;
- anything else (``?query``, an empty link, ``http:a.html``, odd characters first) on the whole
  base, as every link on a page of another scheme.

One resolver serves the reactor and the document threads at once: every use of the cache is a
single dict operation (a lookup, an insert, a clear), each atomic, and the worst two threads
can do to each other is clear entries the other just added, which only costs a join again.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from crawler.identity.normalize import SUPPORTED_SCHEMES, InvalidURL
from crawler.identity.whatwg import join, parse

_KIND = re.compile(
    # ``/path``: one slash or backslash, then neither another nor a tab or newline (removed,
    # they would bring the next slash next to it).
    r"(?P<rooted>[/\\](?:[^/\\\t\r\n]|$))"
    # ``//host`` or ``scheme://host``, the slashes either way round.
    r"|(?P<absolute>(?:[A-Za-z][A-Za-z0-9+.-]*:)?[/\\]{2})"
    # A relative path starts with a character that the URL Standard neither strips (C0
    # controls, space) nor reads as the start of a path, query or fragment, and has no ":"
    # before its first slash (which could make its start a scheme).
    r"|(?P<relative>[^\x00-\x20/?#\\][^:/?#\\]*(?:[/?\\]|$))"
)
"""Which of the kinds above a link is (they exclude one another), by the group that matched."""

Resolved = str | None
"""A link's normal URL, or None when it is not a fetchable http(s) URL."""


class KeyParts(NamedTuple):
    """What the cache key of a link on a page of an http(s) base takes from the base, by the
    link's kind."""

    rooted: str
    """The base's scheme, user and host: ``http://h.test``."""
    absolute: str
    """The base's scheme and its colon: ``http:``."""
    relative: str
    """The base's folder: ``http://h.test/lib/``."""
    other: str
    """The whole base, as a browser writes it."""


class LinkResolver:
    def __init__(self, normalize: Callable[[str], str], cache_size: int = 200_000):
        self.normalize = normalize
        self.cache: dict[tuple[str, str], Resolved] = {}
        """Answers by (the part of the base a link depends on, the link without its fragment);
        the compiled reader of a page's links (``crawler/extraction/_links.c``) looks them up."""
        self._cache_size = cache_size

    def key_parts(self, base: str) -> KeyParts | None:
        """The parts of ``base`` that cache keys take; None for a base that is not http(s), or
        that a browser refuses."""
        standard = parse(base)
        return None if standard is None else _key_parts(standard)

    def for_base(self, base: str) -> Callable[[str], Resolved]:
        """A function resolving links found on a page whose base URL is ``base``."""
        standard = parse(base)
        if standard is None:
            return lambda href: None  # a browser resolves nothing against a base it refuses
        parts = _key_parts(standard)
        if parts is None:
            return lambda href: self._cached((standard, _without_fragment(href)), standard)
        part_of_base = parts._asdict()
        match, cache = _KIND.match, self.cache

        def resolve(href: str) -> Resolved:
            href = _without_fragment(href)
            kind = match(href)
            key = (part_of_base[kind.lastgroup] if kind else standard, href)
            resolved = cache.get(key, False)
            return self.resolve_key(key, standard) if resolved is False else resolved

        return resolve

    def _cached(self, key: tuple[str, str], base: str) -> Resolved:
        resolved = self.cache.get(key, False)
        return self.resolve_key(key, base) if resolved is False else resolved

    def resolve_key(self, key: tuple[str, str], base: str) -> Resolved:
        """The link of ``key`` (not in the cache) against ``base``, resolved and kept there."""
        cache = self.cache
        resolved = self._reference(base, key[1])
        if len(cache) >= self._cache_size:
            cache.clear()  # cheaper than LRU bookkeeping on every hit; refills at once
        cache[key] = resolved
        return resolved

    def _reference(self, base: str, href: str) -> Resolved:
        joined = join(base, href)
        if joined is None:
            return None
        try:
            return self.normalize(joined)
        except InvalidURL:
            return None


def _key_parts(standard: str) -> KeyParts | None:
    scheme = standard.partition(":")[0]
    if scheme not in SUPPORTED_SCHEMES:
        return None
    # A browser writes an http(s) URL as scheme://[user@]host[:port]/path[?query][#fragment],
    # with any "/", "?" or "#" of the user percent-encoded.
    up_to_path = standard.partition("#")[0].partition("?")[0]
    return KeyParts(
        standard[: standard.index("/", len(scheme) + 3)],
        scheme + ":",
        up_to_path[: up_to_path.rindex("/") + 1],
        standard,
    )


def _without_fragment(href: str) -> str:
    head, hash_sign, _ = href.partition("#")
    # Whitespace or a control character before the "#" would end the URL once the fragment is
    # gone, where the URL Standard strips it: keep the fragment (dropped later anyway) then.
    return href if hash_sign and (not head or head[-1] <= " " or head[-1].isspace()) else head

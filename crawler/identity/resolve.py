"""Links of a page to normal URLs, the same as ``normalize(urljoin(base, href))`` but cheaper.

Pages of one site repeat the same links (navigation, index entries, the same page with many
fragments), and joining with the standard library's ``urljoin`` was about a fifth of a crawl's
CPU. Answers are kept in a bounded cache keyed by the part of the base URL the answer depends
on, so a link seen on a sibling page is not joined again:

- the fragment never matters (the normal form drops it), so it is cut off first (``a.html#x``
  and ``a.html#y`` are one link);
- ``/path`` and ``//host/path`` depend only on the base's scheme and host;
- ``scheme://host…`` only on the base's scheme (``urljoin`` returns another scheme's URL as given);
- a relative path (``a.html``, ``../b/``) only on the base's folder;
- anything else (``?query``, an empty link, odd characters first) on the whole base.

One resolver serves the reactor and the document threads at once: every use of the cache is a
single dict operation (a lookup, an insert, a clear), each atomic, and the worst two threads
can do to each other is clear entries the other just added, which only costs a join again.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urljoin, urlsplit

from crawler.identity.normalize import InvalidURL

# ``/path`` or ``//host``; not ``//`` without a host (nor ``/\t/``, the same once urlsplit
# removes the tab), which takes the base's path.
_ROOTED = re.compile(r"/(?:[^/\t\r\n]|$)|//[^\x00-\x20/?#\\]")
# With a host: ``http:///path`` would take the base's host.
_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\x00-\x20/?#\\]")
# A relative path starts with a character that urlsplit neither strips (C0 controls, space)
# nor reads as the start of a path, query or fragment, and has no ":" before its first "/"
# (which would make its start a scheme).
_RELATIVE_PATH = re.compile(r"[^\x00-\x20/?#\\][^:/?#]*(?:[/?]|$)")

Resolved = str | None
"""A link's normal URL, or None when it is not a fetchable http(s) URL."""


class LinkResolver:
    def __init__(self, normalize: Callable[[str], str], cache_size: int = 200_000):
        self.normalize = normalize
        self._cache: dict[tuple[str, str], Resolved] = {}
        self._cache_size = cache_size

    def for_base(self, base: str) -> Callable[[str], Resolved]:
        """A function resolving links found on a page whose base URL is ``base``."""
        try:
            parts = urlsplit(base)
        except ValueError:
            parts = None
        if parts is None or not parts.scheme:
            return lambda href: self._reference(base, _without_fragment(href))
        origin = f"{parts.scheme}://{parts.netloc}"
        folder = origin + parts.path[: parts.path.rfind("/") + 1]
        scheme = parts.scheme + ":"
        cache = self._cache

        def resolve(href: str) -> Resolved:
            href = _without_fragment(href)
            if _ROOTED.match(href):
                key = (origin, href)
            elif _RELATIVE_PATH.match(href):
                key = (folder, href)
            elif _ABSOLUTE.match(href):
                key = (scheme, href)
            else:
                key = (base, href)
            try:
                return cache[key]
            except KeyError:
                pass
            resolved = self._reference(base, href)
            if len(cache) >= self._cache_size:
                cache.clear()  # cheaper than LRU bookkeeping on every hit; refills at once
            cache[key] = resolved
            return resolved

        return resolve

    def _reference(self, base: str, href: str) -> Resolved:
        try:
            return self.normalize(urljoin(base, href))
        except (InvalidURL, ValueError):
            return None


def _without_fragment(href: str) -> str:
    head, hash_sign, _ = href.partition("#")
    # Whitespace or a control character before the "#" would end the URL once the fragment is
    # gone, where the normal form strips it: keep the fragment (dropped later anyway) then.
    return href if hash_sign and (not head or head[-1] <= " " or head[-1].isspace()) else head

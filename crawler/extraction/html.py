"""Extraction from HTML with the lexbor parser (selectolax).

lexbor was chosen by measurement: on link-heavy pages it parses and walks links several times
faster than lxml or Scrapy's ``LinkExtractor`` (see ``bench/``). Links are resolved, normalised
and deduplicated as strings here, so that the spider builds Requests only for new URLs.

What extraction reads (title, metas, links, anchors, the visible text) is found in one walk over
the parsed document: in C (``_walk.c``, through the lexbor functions selectolax's module exports,
without the GIL) where ``scripts/compile.sh`` built it, else in Python through selectolax's API.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from selectolax.lexbor import LexborHTMLParser
from selectolax.lexbor import LexborNode as Node

from crawler.extraction.robots_directives import NONE, RobotsDirectives, parse_robots_directives
from crawler.identity.resolve import LinkResolver
from crawler.identity.whatwg import join

_compiled_walk: Callable[[bytes, bytes], tuple] | None
try:
    from crawler.extraction._walk import walk as _compiled_walk
except ImportError:  # not built: no C compiler where the crawler was installed
    _compiled_walk = None
_compiled_collect: Callable[..., tuple[list[str], list[str], int]] | None
try:
    from crawler.extraction._links import collect_links as _compiled_collect
except ImportError:
    _compiled_collect = None


def _tag_ids(names: str) -> frozenset[int]:
    """lexbor's numbers for these tag names: the walk compares numbers, as reading a node's
    name makes a string of it."""
    tree = LexborHTMLParser("")
    return frozenset(tree.create_node(name).tag_id for name in names.split())


def _text_tag_id() -> int:
    tree = LexborHTMLParser("<p>x</p>")
    return next(node.tag_id for node in tree.body.traverse(include_text=True) if node.tag == "-text")


# The numbers of _walk.c's kinds.
_BLOCK, _ANCHOR, _INVISIBLE, _TITLE, _META, _LINK, _BASE, _TEXT = range(1, 9)
_KIND_OF_TAG = {
    tag: kind
    for kind, names in (
        (
            _BLOCK,
            "address article aside blockquote br dd div dl dt fieldset figcaption figure footer form "
            "h1 h2 h3 h4 h5 h6 header hr li main nav ol option p pre section table td th tr ul",
        ),
        (_ANCHOR, "a area"),
        (_INVISIBLE, "script style noscript template svg head"),
        (_TITLE, "title"),
        (_META, "meta"),
        (_LINK, "link"),
        (_BASE, "base"),
    )
    for tag in _tag_ids(names)
} | {_text_tag_id(): _TEXT}
_KINDS = bytes(_KIND_OF_TAG.get(tag, 0) for tag in range(max(_KIND_OF_TAG) + 1))
"""The kind of each tag number, as the compiled walk reads them."""
_SKIPPED_PREFIXES = ("#", "mailto:", "javascript:", "tel:", "data:", "about:", "ftp:", "sms:", "file:")


@dataclass(slots=True)
class PageData:
    title: str | None = None
    description: str | None = None
    text: str = ""
    text_hash: str = ""
    utf8: bytes = b""
    """``text`` in UTF-8 (its words joined by single spaces), for its SimHash without a second
    encoding; not kept with the page."""
    links: list[str] = field(default_factory=list)
    """Every outgoing link, absolute and normalised, first occurrence order."""
    followable: list[str] = field(default_factory=list)
    """The links not marked ``rel=nofollow``."""
    canonical: str | None = None
    robots: RobotsDirectives = NONE
    invalid_links: int = 0


class Walked(NamedTuple):
    """What extraction reads from a document, found in one walk over its tree: lexbor's CSS
    matching walks the whole tree once per query, and the seven queries of a page (links,
    blocks, title, metas, links of the head, base) cost more than its parse. An attribute
    given without a value (``<base href>``) is there, valued None, as a CSS attribute selector
    sees it."""

    has_head: bool
    title: str | None
    """The text of the first ``title``, wherever it is; None without one."""
    base: str | None
    """The ``href`` of the first ``base`` that has one; None without one."""
    metas: list[tuple[str | None, str | None]]
    """``name`` and ``content`` of each ``meta`` that has both, wherever it is."""
    links: list[tuple[str | None, str | None]]
    """``rel`` and ``href`` of each ``link`` that has both, wherever it is."""
    anchors: list[tuple[str, str | None]]
    """``href`` and ``rel`` of the ``a`` and ``area`` that have a non-empty ``href``."""
    text: bytes
    """The visible text: that of the body outside ``script``, ``style`` and the like, with a
    space on either side of each block; squashed where it is UTF-8, else as lexbor holds it."""
    squashed: bool
    """Whether ``text`` is UTF-8 with each run of what ``str.split`` splits on made one space,
    none at either end."""


def walk(html: bytes, seconds: float = 0) -> Walked:
    """``html`` (UTF-8) parsed and walked: in C without the GIL (``_walk.c``) where
    ``scripts/compile.sh`` built it, given up past ``seconds`` (0: no limit; TimeoutError), else
    in Python through selectolax, with the same result (and no limit: see ``walk_is_bounded``)."""
    if _compiled_walk is not None:
        return Walked._make(_compiled_walk(html, _KINDS, seconds))
    return walk_in_python(html)


def walk_is_bounded() -> bool:
    """Whether ``walk`` gives up a document past the time it is given (the compiled one)."""
    return _compiled_walk is not None


def walk_in_python(html: bytes) -> Walked:
    tree = LexborHTMLParser(html)
    title: Node | None = None
    base: str | None = None
    has_base = False
    metas: list[tuple[str | None, str | None]] = []
    links: list[tuple[str | None, str | None]] = []
    anchors: list[tuple[str, str | None]] = []
    blocks: list[Node] = []
    invisible: list[Node] = []
    kind_of = _KIND_OF_TAG.get
    for node in tree.root.traverse() if tree.root is not None else ():
        kind = kind_of(node.tag_id)
        if kind is None:
            continue
        if kind == _BLOCK:
            blocks.append(node)
        elif kind == _ANCHOR:
            attributes = node.attributes  # a dict, read faster than the lazy ``attrs``
            href = attributes.get("href")
            if href:  # one without a value would be skipped as empty
                anchors.append((href, attributes.get("rel")))
        elif kind == _INVISIBLE:
            invisible.append(node)
        elif kind == _TITLE:
            if title is None:
                title = node
        else:
            attrs = node.attrs
            if kind == _META and "name" in attrs and "content" in attrs:
                metas.append((attrs.get("name"), attrs.get("content")))
            elif kind == _LINK and "rel" in attrs and "href" in attrs:
                links.append((attrs.get("rel"), attrs.get("href")))
            elif kind == _BASE and not has_base and "href" in attrs:
                has_base, base = True, attrs.get("href")
    return Walked(
        tree.head is not None,
        title.text() if title is not None else None,
        base,
        metas,
        links,
        anchors,
        _squashed_utf8(_visible_text(tree, blocks, invisible)),
        True,
    )


def _visible_text(tree: LexborHTMLParser, blocks: list[Node], invisible: list[Node]) -> str:
    # The separators go in before the invisible parts are removed, with them where they are inside.
    for node in blocks:
        node.insert_before(" ")
        node.insert_after(" ")
    # Last first: an invisible element inside another is removed while it is still in the tree.
    for node in reversed(invisible):
        node.decompose(recursive=False)
    # The whole document's where there is no body, or a frameset took its place.
    body = tree.body
    root = body if body is not None and body.parent is not None else tree.root
    return root.text(separator="") if root is not None else ""


def extract_page(
    html: str | bytes,
    url: str,
    normalize: Callable[[str], str],
    user_agents: Iterable[str] = (),
    resolver: LinkResolver | None = None,
    max_links: int = 0,
    seconds: float = 0,
    most_anchors: int = 0,
) -> PageData:
    """Extract what the crawler stores and follows from one HTML document at ``url`` (bytes
    are read as UTF-8). Links are resolved by ``resolver`` (one for the whole crawl shares its
    cache between pages), else by one of ``normalize`` for this page; at most ``max_links``
    distinct links are read (0: all), as each costs a URL normalisation. ``seconds`` bounds the
    walk (``walk``); a document of more than ``most_anchors`` links (0: any) is not read further
    (TimeoutError: the reader has no time for them)."""
    found = walk(html.encode("utf-8", "ignore") if isinstance(html, str) else html, seconds)
    if most_anchors and len(found.anchors) > most_anchors:
        raise TimeoutError(f"{len(found.anchors)} links, more than {most_anchors} to read now")
    page = PageData()
    resolver = resolver or LinkResolver(normalize)
    base = _base_url(found.base, url) if found.has_head else url
    resolve = resolver.for_base(base)
    if found.has_head:
        if found.title is not None:
            page.title = _squash(found.title) or None
        metas = [((name or "").strip().lower(), content or "") for name, content in found.metas]
        page.robots = _meta_robots(metas, user_agents)
        page.description = _squash(next((content for name, content in metas if name == "description"), "")) or None
        canonical = _link_href(found.links, "canonical")
        if canonical:
            page.canonical = resolve(canonical)
            if page.canonical is None:
                page.invalid_links += 1
    parts = resolver.key_parts(base) if _compiled_collect is not None else None
    if parts is not None:
        page.links, page.followable, invalid = _compiled_collect(
            found.anchors, max_links, _SKIPPED_PREFIXES, parts, resolver.cache, resolver.resolve_key
        )
        page.invalid_links += invalid
    else:
        _collect_links(found.anchors, resolve, page, max_links)
    # Words are separated at block boundaries only, so "<b>para</b>graph" stays one word.
    text = found.text if found.squashed else _squashed_utf8(found.text.decode("utf-8", "replace"))
    page.utf8 = text
    page.text = text.decode("utf-8")
    page.text_hash = hashlib.sha256(text).hexdigest()
    return page


def _base_url(href: str | None, url: str) -> str:
    """The document's base URL: its first ``base`` with an ``href``, resolved against the
    page's URL as a browser does (the page's own URL when that is empty or refused)."""
    href = (href or "").strip()
    return (join(url, href) if href else None) or url


def _meta_robots(metas: list[tuple[str, str]], user_agents: Iterable[str]) -> RobotsDirectives:
    names = {"robots", *(a.lower() for a in user_agents)}
    contents = [content for name, content in metas if name in names]
    return parse_robots_directives(contents) if contents else NONE


def _link_href(links: list[tuple[str | None, str | None]], rel: str) -> str | None:
    """The ``href`` of the first ``link`` whose ``rel`` has ``rel`` (None where it is empty)."""
    for rels, href in links:
        if rel in (rels or "").lower().split():
            return (href or "").strip() or None
    return None


def _collect_links(
    anchors: list[tuple[str, str | None]], resolve: Callable[[str], str | None], page: PageData, max_links: int
) -> None:
    seen: dict[str, bool] = {}  # link -> followable
    # A page repeats its links (an index, a table of contents): each href is read once.
    read: dict[str, str | None] = {}
    invalid = 0
    for href, rel in anchors:
        if max_links and len(seen) >= max_links:
            break
        link = read.get(href, False)
        if link is False:
            stripped = href.strip()
            skipped = not stripped or stripped.lower().startswith(_SKIPPED_PREFIXES)
            link = read[href] = "" if skipped else resolve(stripped)
        if link is None:
            invalid += 1
        elif link:  # "" for a link not followed at all (mailto:, #top, empty)
            if rel is None or "nofollow" not in rel.lower():
                seen[link] = True
            elif link not in seen:
                seen[link] = False
    page.invalid_links += invalid
    page.links = list(seen)
    page.followable = [link for link, followable in seen.items() if followable]


STR_ONLY_SPACES = (
    "\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
"""What ``str.split`` splits on and ``bytes.split`` does not (the rest is ASCII whitespace): the
spaces ``_walk.c``'s ``space_at`` makes plain ones, so that the squashed text's words are a
split of its bytes."""


def _squashed_utf8(text: str) -> bytes:
    """``text``'s words in UTF-8, one space between each (as ``_walk.c`` squashes it)."""
    return _squash(text).encode("utf-8")


def _squash(text: str) -> str:
    return " ".join(text.split())

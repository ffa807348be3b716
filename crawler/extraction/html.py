"""Extraction from HTML with the lexbor parser (selectolax).

lexbor was chosen by measurement: on link-heavy pages it parses and walks links several times
faster than lxml or Scrapy's ``LinkExtractor`` (see ``bench/``). Links are resolved, normalised
and deduplicated as strings here, so that the spider builds Requests only for new URLs.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser
from selectolax.lexbor import LexborNode as Node

from crawler.extraction.robots_directives import NONE, RobotsDirectives, parse_robots_directives
from crawler.identity.resolve import LinkResolver
from crawler.identity.whatwg import join


def _tag_ids(names: str) -> frozenset[int]:
    """lexbor's numbers for these tag names: the walk compares numbers, as reading a node's
    name makes a string of it."""
    tree = LexborHTMLParser("")
    return frozenset(tree.create_node(name).tag_id for name in names.split())


_BLOCK, _ANCHOR, _HEAD, _INVISIBLE = range(4)
_KIND_OF_TAG = {
    tag: kind
    for kind, names in (
        (
            _BLOCK,
            "address article aside blockquote br dd div dl dt fieldset figcaption figure footer form "
            "h1 h2 h3 h4 h5 h6 header hr li main nav ol option p pre section table td th tr ul",
        ),
        (_ANCHOR, "a area"),
        (_HEAD, "title meta link base"),
        (_INVISIBLE, "script style noscript template svg head"),
    )
    for tag in _tag_ids(names)
}
_SKIPPED_PREFIXES = ("#", "mailto:", "javascript:", "tel:", "data:", "about:", "ftp:", "sms:", "file:")


@dataclass(slots=True)
class PageData:
    title: str | None = None
    description: str | None = None
    text: str = ""
    text_hash: str = ""
    words: list[bytes] = field(default_factory=list)
    """The words of ``text`` in UTF-8 (``text`` is them joined by spaces), for its SimHash
    without a second split; an object a word, many times the text's size, so not kept long."""
    links: list[str] = field(default_factory=list)
    """Every outgoing link, absolute and normalised, first occurrence order."""
    followable: list[str] = field(default_factory=list)
    """The links not marked ``rel=nofollow``."""
    canonical: str | None = None
    robots: RobotsDirectives = NONE
    invalid_links: int = 0


def extract_page(
    html: str | bytes,
    url: str,
    normalize: Callable[[str], str],
    user_agents: Iterable[str] = (),
    resolver: LinkResolver | None = None,
    max_links: int = 0,
) -> PageData:
    """Extract what the crawler stores and follows from one HTML document at ``url`` (bytes
    are read as UTF-8). Links are resolved by ``resolver`` (one for the whole crawl shares its
    cache between pages), else by one of ``normalize`` for this page; at most ``max_links``
    distinct links are read (0: all), as each costs a URL normalisation."""
    tree = LexborHTMLParser(html)
    page = PageData()
    found = _Elements.of(tree)
    has_head = tree.head is not None
    resolve = (resolver or LinkResolver(normalize)).for_base(found.base_href(url) if has_head else url)
    if has_head:
        title = found.first("title")
        if title is not None:
            page.title = _squash(title.text()) or None
        page.robots = found.meta_robots(user_agents)
        page.description = found.meta_content("description")
        canonical = found.link_href("canonical")
        if canonical:
            page.canonical = resolve(canonical)
            if page.canonical is None:
                page.invalid_links += 1
    _collect_links(found.anchors, resolve, page, max_links)
    page.words = _visible_words(tree, found)
    text = b" ".join(page.words)
    page.text = text.decode("utf-8")
    page.text_hash = hashlib.sha256(text).hexdigest()
    return page


@dataclass(slots=True)
class _Elements:
    """The elements extraction reads, found in one walk over the document: lexbor's CSS
    matching walks the whole tree once per query, and the seven queries of a page (links,
    blocks, title, metas, links of the head, base) cost more than its parse."""

    anchors: list[tuple[str, str | None]] = field(default_factory=list)
    """``href`` and ``rel`` of the ``a`` and ``area`` that have a non-empty ``href``."""
    blocks: list[Node] = field(default_factory=list)
    invisible: list[Node] = field(default_factory=list)
    head: list[Node] = field(default_factory=list)
    """``title``, ``meta``, ``link`` and ``base``, wherever they are."""

    @classmethod
    def of(cls, tree: LexborHTMLParser) -> _Elements:
        found = cls()
        if tree.root is None:
            return found
        kind_of = _KIND_OF_TAG.get
        for node in tree.root.traverse():
            kind = kind_of(node.tag_id)
            if kind is None:
                continue
            if kind == _BLOCK:
                found.blocks.append(node)
            elif kind == _ANCHOR:
                attributes = node.attributes  # a dict, read faster than the lazy ``attrs``
                href = attributes.get("href")
                if href:  # one without a value would be skipped as empty
                    found.anchors.append((href, attributes.get("rel")))
            elif kind == _HEAD:
                found.head.append(node)
            else:
                found.invisible.append(node)
        return found

    def first(self, tag: str) -> Node | None:
        return next((node for node in self.head if node.tag == tag), None)

    # An attribute given without a value (``<base href>``) is there, valued None, as a CSS
    # attribute selector sees it: the first such element counts, with an empty value.

    def base_href(self, url: str) -> str:
        """The document's base URL: the first ``base`` with an ``href``, resolved against the
        page's URL as a browser does (the page's own URL when that is empty or refused)."""
        base = next((node for node in self.head if node.tag == "base" and "href" in node.attrs), None)
        href = (base.attrs.get("href") or "").strip() if base is not None else ""
        return (join(url, href) if href else None) or url

    def _metas(self) -> Iterator[tuple[str, str]]:
        """``(name, content)`` of the metas that have both, name stripped and lowercase."""
        for node in self.head:
            if node.tag == "meta":
                attrs = node.attrs
                if "name" in attrs and "content" in attrs:
                    yield (attrs.get("name") or "").strip().lower(), attrs.get("content") or ""

    def meta_robots(self, user_agents: Iterable[str]) -> RobotsDirectives:
        names = {"robots", *(a.lower() for a in user_agents)}
        contents = [content for name, content in self._metas() if name in names]
        return parse_robots_directives(contents) if contents else NONE

    def meta_content(self, name: str) -> str | None:
        return _squash(next((content for meta, content in self._metas() if meta == name), "")) or None

    def link_href(self, rel: str) -> str | None:
        for node in self.head:
            if node.tag == "link":
                attrs = node.attrs
                if "rel" in attrs and "href" in attrs and rel in (attrs.get("rel") or "").lower().split():
                    return (attrs.get("href") or "").strip() or None
        return None


def _collect_links(
    anchors: list[tuple[str, str | None]], resolve: Callable[[str], str | None], page: PageData, max_links: int
) -> None:
    seen: dict[str, bool] = {}  # link -> followable
    for href, rel in anchors:
        if max_links and len(seen) >= max_links:
            break
        href = href.strip()
        if not href or href.lower().startswith(_SKIPPED_PREFIXES):
            continue
        link = resolve(href)
        if link is None:
            page.invalid_links += 1
            continue
        followable = "nofollow" not in (rel or "").lower()
        seen[link] = seen.get(link, False) or followable
    page.links = list(seen)
    page.followable = [link for link, followable in seen.items() if followable]


def _visible_words(tree: LexborHTMLParser, found: _Elements) -> list[bytes]:
    # Words are separated at block boundaries only, so "<b>para</b>graph" stays one word. The
    # separators go in before the invisible parts are removed, with them where they are inside.
    for node in found.blocks:
        node.insert_before(" ")
        node.insert_after(" ")
    # Last first: an invisible element inside another is removed while it is still in the tree.
    for node in reversed(found.invisible):
        node.decompose(recursive=False)
    root = tree.body or tree.root
    return _utf8_words(root.text(separator="")) if root is not None else []


STR_ONLY_SPACES = (
    "\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
"""What ``str.split`` splits on and ``bytes.split`` does not (the rest is ASCII whitespace)."""
# Whole characters only: in UTF-8 no character's bytes are found inside another's.
_STR_ONLY_SPACES_UTF8 = re.compile(b"|".join(re.escape(space.encode()) for space in STR_ONLY_SPACES))


def _utf8_words(text: str) -> list[bytes]:
    """The words of ``text.split()``, each in UTF-8. Split as bytes, the same words serve the
    stored text, its hash and its SimHash: one split, where a split of the text and another of
    its UTF-8 for the SimHash cost more than the replacement of the spaces not ASCII."""
    return _STR_ONLY_SPACES_UTF8.sub(b" ", text.encode("utf-8")).split()


def _squash(text: str) -> str:
    return " ".join(text.split())

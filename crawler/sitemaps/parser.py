"""Parse one sitemap document, whatever its format; no I/O.

Scrapy's ``scrapy.utils.sitemap.Sitemap`` reads only XML urlsets and indexes and keeps the
first ``loc`` of an entry; this parser also reads plain-text, RSS and Atom sitemaps, entries
with several or bare ``loc`` values, and gzip detected by content, with the decompressed size
capped. Entities are never expanded and nothing is fetched from the network while parsing. A
document cut short yields no partial URL or date: the entry it ends in the middle of is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from io import BytesIO
from typing import Literal
from urllib.parse import urljoin, urlsplit

import lxml.etree
from scrapy.utils.gz import gunzip

from crawler.sitemaps.dates import parse_date

Kind = Literal["urlset", "index", "text", "rss", "atom"]

SITEMAP_NAMESPACES = frozenset(
    {
        "http://www.sitemaps.org/schemas/sitemap/0.9",
        "http://www.google.com/schemas/sitemap/0.84",
        "http://www.google.com/schemas/sitemap/0.9",
    }
)
STRICT_NAMESPACE = "http://www.sitemaps.org/schemas/sitemap/0.9"
CHANGEFREQS = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})
_GZIP_MAGIC = b"\x1f\x8b"
_XML_ROOTS: dict[str, Kind] = {"urlset": "urlset", "sitemapindex": "index", "rss": "rss", "RDF": "rss", "feed": "atom"}
_ENTRY_TAGS: dict[Kind, str] = {"urlset": "url", "index": "sitemap", "rss": "item", "atom": "entry"}
# An Atom entry's last change, best first: Atom 1.0 then 0.3 names, its publication if no change is given.
_ATOM_DATES = ("updated", "modified", "published", "issued")


class SitemapError(ValueError):
    """The document is not a sitemap this parser can read; the message says why."""


@dataclass(frozen=True, slots=True)
class SitemapEntry:
    loc: str
    lastmod: datetime | None = None
    changefreq: str | None = None
    priority: float | None = None


@dataclass(slots=True)
class SitemapDocument:
    kind: Kind
    entries: list[SitemapEntry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """What was wrong but skipped (invalid URLs, recovered XML errors)."""

    @property
    def is_index(self) -> bool:
        return self.kind == "index"


def parse_sitemap(
    body: bytes,
    url: str,
    *,
    max_size: int = 50 * 1024 * 1024,
    strict: bool = False,
    strict_namespace: bool = False,
) -> SitemapDocument:
    """Parse ``body`` fetched from ``url``.

    ``strict`` applies the sitemaps.org rule that a sitemap lists only URLs under its own
    directory; ``strict_namespace`` refuses urlsets and indexes not in the sitemaps.org
    namespace. Raises SitemapError for an unreadable document.
    """
    body = _decompress(body, max_size)
    if max_size and len(body) > max_size:
        raise SitemapError(f"sitemap larger than {max_size} bytes")
    # A BOM or blank lines before the XML declaration make libxml2 misread the document.
    body = body.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not body:
        raise SitemapError("empty document")
    if body.startswith(b"<"):
        document = _parse_xml(body, url, strict_namespace)
    else:
        document = _parse_text(body)
    # The cross-submit rule is about pages; an index may point anywhere.
    document = _keep_valid(document, url, strict and not document.is_index)
    if document.kind == "text" and not document.entries and document.problems:
        raise SitemapError("not a sitemap: no URL in the text")
    return document


def _decompress(body: bytes, max_size: int) -> bytes:
    if not body.startswith(_GZIP_MAGIC):
        return body
    try:
        return gunzip(body, max_size=max_size)
    except ValueError as exc:  # scrapy's size-exceeded error is a ValueError
        raise SitemapError(f"gzip sitemap: {exc}") from None
    except (OSError, EOFError) as exc:
        raise SitemapError(f"corrupt gzip data: {exc}") from None


def _parse_text(body: bytes) -> SitemapDocument:
    text = body.decode("utf-8", errors="replace")
    return SitemapDocument("text", [SitemapEntry(line.strip()) for line in text.splitlines() if line.strip()])


def _xml_parser(target: object = None) -> lxml.etree.XMLParser:
    return lxml.etree.XMLParser(
        recover=True,
        resolve_entities=False,
        no_network=True,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
        load_dtd=False,
        target=target,
    )


def _parse_xml(body: bytes, url: str, strict_namespace: bool) -> SitemapDocument:
    parser = _xml_parser()
    try:
        root = lxml.etree.parse(BytesIO(body), parser).getroot()
    except lxml.etree.LxmlError as exc:
        raise SitemapError(f"unreadable XML: {exc}") from None
    if root is None:
        raise SitemapError("unreadable XML: no root element")
    namespace, local = _split_tag(root.tag)
    kind = _XML_ROOTS.get(local)
    if kind is None:
        raise SitemapError(f"unknown sitemap format: root element <{local}>")
    if kind in ("urlset", "index") and strict_namespace and namespace != STRICT_NAMESPACE:
        raise SitemapError(f"namespace {namespace or 'none'!r} not accepted")
    problems: list[str] = []
    errors = [e for e in parser.error_log if e.level >= lxml.etree.ErrorLevels.ERROR]
    if errors:
        problems.append(f"malformed XML, recovered what was readable: {errors[0].message}")
        if _drop_unfinished_entry(root, body, _ENTRY_TAGS[kind]):
            problems.append("cut short inside its last entry, which was dropped")
    reader = {"urlset": _sitemap_entries, "index": _sitemap_entries, "rss": _rss_entries, "atom": _atom_entries}
    return SitemapDocument(kind, list(reader[kind](root, url)), problems)


class _Ending:
    """A parser target that sees how a document ends: the elements it leaves open (local
    names), and whether it ends in the middle of a text."""

    def __init__(self) -> None:
        self.open: list[str] = []
        self.in_text = False

    def start(self, tag: str, attrib: object) -> None:
        self.open.append(_split_tag(tag)[1])
        self.in_text = False

    def end(self, tag: str) -> None:
        if self.open:
            self.open.pop()
        self.in_text = False

    def data(self, text: str) -> None:
        if text.strip():
            self.in_text = True

    def close(self) -> _Ending:
        return self


def _drop_unfinished_entry(root: lxml.etree._Element, body: bytes, entry_tag: str) -> bool:
    """Remove the last entry if the document ends in the middle of one of its texts, which
    may be a partial URL (``…/page_``) that the recovered tree cannot tell from a whole one.
    Cut inside a tag, the entry's texts are whole and it is kept (as crawler-commons keeps
    it). Whether it was removed."""
    ending = lxml.etree.fromstring(body, _xml_parser(_Ending()))
    if not (ending.in_text and entry_tag in ending.open):
        return False
    # The entry the document ends in is the last of its name: nothing started after it.
    unfinished = list(root.iter(f"{{*}}{entry_tag}"))[-1]
    unfinished.getparent().remove(unfinished)
    return True


def _sitemap_entries(root: lxml.etree._Element, url: str):
    entry_tag = "sitemap" if _split_tag(root.tag)[1] == "sitemapindex" else "url"
    for element in root:
        if _split_tag(element.tag)[1] != entry_tag:
            continue
        # An entry may hold several <loc>; each takes the fields that follow it. Some
        # sitemaps put the URL directly in <url>/<sitemap> with no <loc> at all.
        entries: list[dict[str, str]] = []
        for child in element:
            name = _split_tag(child.tag)[1]
            if name == "loc":
                entries.append({"loc": _text(child)})
            elif name in ("lastmod", "changefreq", "priority"):
                if not entries:
                    entries.append({})
                entries[-1].setdefault(name, _text(child))
        if not entries or "loc" not in entries[0]:
            first = entries[0] if entries else {}
            entries[:1] = [{**first, "loc": _own_text(element)}]
        for fields in entries:
            changefreq = fields.get("changefreq", "").lower()
            yield SitemapEntry(
                fields["loc"],
                parse_date(fields.get("lastmod")),
                changefreq if changefreq in CHANGEFREQS else None,
                _priority(fields.get("priority")),
            )


def _rss_entries(root: lxml.etree._Element, url: str):
    for item in root.iter("{*}item"):
        fields = {_split_tag(child.tag)[1]: child for child in item}
        link = fields.get("link")
        loc = _text(link) if link is not None else ""
        if not loc and fields.get("guid") is not None:
            loc = _text(fields["guid"])
        pubdate = fields.get("pubDate")
        yield SitemapEntry(loc, parse_date(_text(pubdate)) if pubdate is not None else None)


def _atom_entries(root: lxml.etree._Element, url: str):
    for entry in root.iter("{*}entry"):
        dates: dict[str, datetime | None] = {}
        loc = ""
        for child in entry:
            local = _split_tag(child.tag)[1]
            if local == "link" and child.get("rel", "alternate") == "alternate" and not loc:
                href = (child.get("href") or "").strip()
                loc = urljoin(url, href) if href else ""  # not the feed's own URL
            elif local in _ATOM_DATES and dates.get(local) is None:
                dates[local] = parse_date(_text(child))
        yield SitemapEntry(loc, next((dates[name] for name in _ATOM_DATES if dates.get(name)), None))


def _keep_valid(document: SitemapDocument, url: str, strict: bool) -> SitemapDocument:
    prefix = urljoin(url, ".") if strict else ""
    kept: list[SitemapEntry] = []
    for entry in document.entries:
        entry = _repaired(entry)
        problem = _url_problem(entry.loc)
        if problem is None and strict and not entry.loc.startswith(prefix):
            problem = f"outside the sitemap's directory {prefix}"
        if problem is None:
            kept.append(entry)
        else:
            document.problems.append(f"skipped {entry.loc[:200]!r}: {problem}")
    document.entries = kept
    return document


def _repaired(entry: SitemapEntry) -> SitemapEntry:
    """Drop the fragment, and read a scheme-less ``www.example.com/page`` as http."""
    loc = entry.loc.partition("#")[0]
    if "://" not in loc and "." in loc.partition("/")[0] and not loc.startswith("/"):
        loc = f"http://{loc}"
    return entry if loc == entry.loc else replace(entry, loc=loc)


def _url_problem(loc: str) -> str | None:
    if not loc:
        return "empty location"
    try:
        parts = urlsplit(loc)
    except ValueError as exc:
        return f"unparsable URL: {exc}"
    if parts.scheme.lower() not in ("http", "https"):
        return "not an absolute http(s) URL"
    if not parts.netloc or any(c.isspace() for c in loc):
        return "invalid URL"
    return None


def _priority(text: str | None) -> float | None:
    try:
        value = float(text) if text else None
    except ValueError:
        return None
    return value if value is not None and 0.0 <= value <= 1.0 else None


def _split_tag(tag: object) -> tuple[str, str]:
    if not isinstance(tag, str):
        return "", ""
    if tag.startswith("{"):
        namespace, _, local = tag[1:].partition("}")
        return namespace, local
    return "", tag


def _text(element: lxml.etree._Element) -> str:
    # An entity is never expanded; a value that used one is unusable, so it is left empty.
    if any(isinstance(node, lxml.etree._Entity) for node in element.iter()):
        return ""
    return "".join(element.itertext()).strip()


def _own_text(element: lxml.etree._Element) -> str:
    if any(isinstance(node, lxml.etree._Entity) for node in element):
        return ""
    return (element.text or "").strip()

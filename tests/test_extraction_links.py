"""The reading of a page's links from its anchors: in C (``_links.c``, with the resolver's
cache) and in Python (``html._collect_links``), with the same links, followable links and count
of invalid ones, and the same answers left in the cache."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.extraction import html
from crawler.extraction.html import PageData
from crawler.identity import normalize_url
from crawler.identity.resolve import LinkResolver
from tests.test_extraction import COMPILED_MISSING

BASES = [
    "http://h.test/lib/os.html",
    "https://u@h.test:8443/a/b/?q=1",
    "http://h.test",
    "http://127.0.0.1/x/y#f",
    "https://xn--fa-hia.test/ü/",
]

_HREF_PARTS = [
    *("/", "\\", "//", "#", "?", ":", ".", "..", "a", "B", "x.html", "h.test", "http:", "HTTPS:", "ftp:", "c+d.e-f:"),
    *("mailto:", "JavaScript:", "tel:", "data:", "about:", "sms:", "file:", "javascrİpt:", "MAİLTO:", "K", "İ"),
    *(" ", "\t", "\n", "\r", "\x0b", "\x00", "\x1f", "\xa0", "\u3000", "\u2028", "%20", "%", "é", "日本", "@", "[::1]"),
]
_RELS = [None, "", "nofollow", "NoFollow", "external nofollow", "noFOLLOW", "nofollo", "nofollowİ", "K nofollow", "İ"]


def _by_both(anchors: list[tuple[str, str | None]], base: str, max_links: int) -> tuple[PageData, PageData]:
    """The anchors read by each, with a resolver of its own that already knows a few answers."""
    assert html._compiled_collect is not None, COMPILED_MISSING
    pages = []
    caches = []
    for compiled in (True, False):
        resolver = LinkResolver(normalize_url)
        resolver.for_base("http://h.test/lib/")("/warm.html")
        page = PageData()
        if compiled:
            parts = resolver.key_parts(base)
            assert parts is not None
            page.links, page.followable, page.invalid_links = html._compiled_collect(
                anchors, max_links, html._SKIPPED_PREFIXES, parts, resolver.cache, resolver.resolve_key
            )
        else:
            html._collect_links(anchors, resolver.for_base(base), page, max_links)
        pages.append(page)
        caches.append(resolver.cache)
    assert caches[0] == caches[1]
    return pages[0], pages[1]


@settings(max_examples=2000, deadline=None)
@given(
    st.lists(st.tuples(st.lists(st.sampled_from(_HREF_PARTS), max_size=6).map("".join), st.sampled_from(_RELS))),
    st.sampled_from(BASES),
    st.sampled_from([0, 1, 3]),
)
def test_the_compiled_reading_of_links_is_the_python_one(
    anchors: list[tuple[str, str | None]], base: str, max_links: int
) -> None:
    compiled, python = _by_both(anchors, base, max_links)
    assert (compiled.links, compiled.followable, compiled.invalid_links) == (
        python.links,
        python.followable,
        python.invalid_links,
    )


@pytest.mark.parametrize(
    ("anchors", "links", "followable", "invalid"),
    [
        # a repeated link read once; a fragment cut; nofollow only where no anchor follows it
        (
            [("a.html#x", None), ("a.html#y", "NoFollow"), ("/b", "nofollow"), ("//h.test/b", None)],
            ["http://h.test/lib/a.html", "http://h.test/b"],
            ["http://h.test/lib/a.html", "http://h.test/b"],
            0,
        ),
        (
            [(" /c ", "external nofollow"), ("MAILTO:x@h.test", None), ("#top", None), ("", None)],
            ["http://h.test/c"],
            [],
            0,
        ),
        # the kinds of link: rooted, absolute with and without a scheme, relative, a query
        (
            [("/r", None), ("http://o.test/p", None), ("\\\\s.test\\q", None), ("../up", None), ("?q=1", None)],
            [
                "http://h.test/r",
                "http://o.test/p",
                "http://s.test/q",
                "http://h.test/up",
                "http://h.test/lib/os.html?q=1",
            ],
            [
                "http://h.test/r",
                "http://o.test/p",
                "http://s.test/q",
                "http://h.test/up",
                "http://h.test/lib/os.html?q=1",
            ],
            0,
        ),
        # not fetchable, counted each time; a character lower case makes two of (not a prefix)
        (
            [("http://[bad/", None), ("http://[bad/", None), ("javascrİpt:x", None)],
            ["http://h.test/lib/javascr%C4%B0pt:x"],
            ["http://h.test/lib/javascr%C4%B0pt:x"],
            2,
        ),
    ],
)
def test_links_read_from_anchors(
    anchors: list[tuple[str, str | None]], links: list[str], followable: list[str], invalid: int
) -> None:
    compiled, python = _by_both(anchors, "http://h.test/lib/os.html", 0)
    for page in (compiled, python):
        assert (page.links, page.followable, page.invalid_links) == (links, followable, invalid)


def test_links_are_read_until_the_limit_of_distinct_links() -> None:
    anchors = [("a", None), ("a#x", "nofollow"), ("b", "nofollow"), ("c", None), ("b", None)]
    compiled, python = _by_both(anchors, "http://h.test/", 2)
    for page in (compiled, python):
        # "c" and the later anchor that follows "b" come after the limit
        assert (page.links, page.followable) == (["http://h.test/a", "http://h.test/b"], ["http://h.test/a"])


def test_a_prefix_is_compared_as_python_lowers_a_character_outside_ascii() -> None:
    assert html._compiled_collect is not None, COMPILED_MISSING
    resolver = LinkResolver(normalize_url)
    parts = resolver.key_parts("http://h.test/")
    assert parts is not None
    # The Kelvin sign's lower case is "k"; "İ" lowers to two characters.
    anchors = [("\u212a:x", None), ("Kİ:y", None)]
    links, _, _ = html._compiled_collect(anchors, 0, ("k:", "ki:"), parts, resolver.cache, resolver.resolve_key)
    assert links == ["http://h.test/K%C4%B0:y"]


def test_an_error_of_the_resolver_reaches_the_caller() -> None:
    assert html._compiled_collect is not None, COMPILED_MISSING
    resolver = LinkResolver(normalize_url)
    parts = resolver.key_parts("http://h.test/")
    assert parts is not None

    def failing(key: tuple[str, str], base: str) -> str:
        raise RuntimeError("resolver down")

    with pytest.raises(RuntimeError, match="resolver down"):
        html._compiled_collect([("a", None)], 0, html._SKIPPED_PREFIXES, parts, resolver.cache, failing)
    with pytest.raises(TypeError, match="a link resolves to a string or None, not int"):
        html._compiled_collect([("a", None)], 0, html._SKIPPED_PREFIXES, parts, {}, lambda key, base: 1)


def test_the_compiled_reading_refuses_what_is_not_an_anchor() -> None:
    assert html._compiled_collect is not None, COMPILED_MISSING
    resolver = LinkResolver(normalize_url)
    parts = resolver.key_parts("http://h.test/")
    assert parts is not None
    for anchors in ([("a",)], [(b"a", None)], [("a", b"rel")], ["a"]):
        with pytest.raises(TypeError):
            html._compiled_collect(anchors, 0, html._SKIPPED_PREFIXES, parts, resolver.cache, resolver.resolve_key)
    with pytest.raises(ValueError, match="ASCII"):
        html._compiled_collect([], 0, ("é:",), parts, resolver.cache, resolver.resolve_key)

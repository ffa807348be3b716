"""Link resolution with its cache gives what ``normalize(join(base, href))`` gives: links are
resolved as browsers resolve them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.identity import InvalidURL, UrlNormalizer
from crawler.identity.resolve import LinkResolver
from crawler.identity.whatwg import join

normalize = UrlNormalizer()


def reference(base: str, href: str) -> str | None:
    joined = join(base, href)
    if joined is None:
        return None
    try:
        return normalize(joined)
    except InvalidURL:
        return None


@pytest.mark.parametrize(
    ("base", "href", "expected"),
    [
        ("http://example.org/foo/bar", "\\x", "http://example.org/x"),
        ("http://example.org/foo/bar", "\\\\cdn.example.net\\lib.js", "http://cdn.example.net/lib.js"),
        ("http://example.org/foo/bar", "https:example.com/", "https://example.com/"),
        ("http://example.org/foo/bar", "http:a.html", "http://example.org/foo/a.html"),
        ("http://example.org/foo/bar", "http:///example.com/a", "http://example.com/a"),
        ("https://example.org/", "//faß.example/", "https://xn--fa-hia.example/"),
        ("http://example.org/", "http://0x7f.1/", "http://127.0.0.1/"),
        ("http://example.org/", "http://256.256.256.256/", None),
        ("http://example.org/", "http://1.2.3.08/", None),
        ("http://example.org/", "http://example.09/", None),
        ("http://example.org/", "mailto:a@example.org", None),
    ],
)
def test_links_resolve_as_browsers_resolve_them(base: str, href: str, expected: str | None) -> None:
    assert LinkResolver(normalize).for_base(base)(href) == expected


# Pieces that exercise each way the answer depends on the base: folders, hosts, schemes,
# queries, empty and odd links, characters the URL Standard strips or removes, backslashes, dot
# segments.
_SEGMENTS = [
    "a",
    "b.html",
    "..",
    ".",
    "",
    "x;p",
    "%41",
    "é",
    "c:d",
    "?q=1",
    "#f",
    "\t",
    "\n",
    " ",
    "\x01",
    "\\",
    "\\\\",
    ":",
    "//",
    "@",
]
_PREFIXES = [
    "",
    "/",
    "//",
    "http://",
    "https://",
    "HTTP://",
    "http:",
    "https:",
    "http:\\\\",
    "/\\",
    "\\",
    "\t/",
    "/\t",
    "http:///",
    "mailto:",
    "ftp://",
    "?",
    "#",
    "../",
    "./",
    "\x01",
    " ",
]
_HOSTS = ["h.test", "H.test:80", "h.test:8080", "o.test", "u:p@h.test", "[::1]", "[bad", "", "0x7f.1", "faß.test"]
_SCHEMES = ["http", "https", "mailto", "ftp"]

hrefs = st.builds(
    lambda prefix, segments: prefix + "".join(segments),
    st.sampled_from(_PREFIXES),
    st.lists(st.sampled_from(_SEGMENTS), max_size=5),
)
paths = st.lists(st.sampled_from(["a", "b", "c.html", "x;p", "..", ""]), max_size=4).map(lambda s: "/" + "/".join(s))
bases = st.builds(
    lambda scheme, host, path, query: f"{scheme}://{host}{path}{query}",
    st.sampled_from(_SCHEMES),
    st.sampled_from(_HOSTS),
    paths | st.just(""),
    st.sampled_from(["", "?q=1", "?q=2", "#top"]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(bases, min_size=1, max_size=4), st.lists(hrefs, min_size=1, max_size=8))
def test_same_answers_as_join_then_normalize(base_list: list[str], href_list: list[str]) -> None:
    # One resolver for all bases: an answer cached for one base must be right for the next.
    resolver = LinkResolver(normalize)
    for _ in range(2):
        for base in base_list:
            resolve = resolver.for_base(base)
            for href in href_list:
                assert resolve(href) == reference(base, href), (base, href)


@given(st.text(max_size=30), st.text(max_size=30))
def test_any_text_resolves_like_the_reference(base: str, href: str) -> None:
    resolver = LinkResolver(normalize)
    assert resolver.for_base(base)(href) == reference(base, href)
    assert resolver.for_base("http://h.test/a/b")(href) == reference("http://h.test/a/b", href)


def test_links_of_sibling_pages_share_answers() -> None:
    resolver = LinkResolver(normalize)
    assert resolver.for_base("http://h.test/lib/os.html")("sys.html#auditing") == "http://h.test/lib/sys.html"
    cached = len(resolver.cache)
    assert resolver.for_base("http://h.test/lib/io.html?x=1")("sys.html#exit") == "http://h.test/lib/sys.html"
    assert resolver.for_base("http://h.test/other/x.html")("/lib/sys.html") == "http://h.test/lib/sys.html"
    assert resolver.for_base("http://h.test/lib/y.html")("/lib/sys.html") == "http://h.test/lib/sys.html"
    assert len(resolver.cache) == cached + 1  # one join for the root-relative link, none for the rest
    assert resolver.for_base("http://h.test/lib/y.html")("mailto:x@h.test") is None


def test_the_cache_stays_bounded() -> None:
    resolver = LinkResolver(normalize, cache_size=10)
    resolve = resolver.for_base("http://h.test/")
    for n in range(25):
        assert resolve(f"p{n}.html") == f"http://h.test/p{n}.html"
    assert len(resolver.cache) <= 10


# --- the fast path of URLs already in normal form -----------------------------------------------

_plain_hosts = st.lists(
    st.sampled_from(["a", "b-c", "x_y", "xn--zz", "0x7f", "127", "0", "ex", "-", "A"]), min_size=1, max_size=4
).map(".".join)
_plain_paths = st.lists(st.sampled_from(["", "a", ".", "..", ".x", "x.", "~u", "a-b_c", "%41", "A"]), max_size=5).map(
    "/".join
)

_KEPT_IN_QUERY = st.sampled_from(["a", "b", "A", "@", ":", "/", "?", "'", "!", "$", "(", "*", ",", ";", "~", "-", "."])
_query_text = st.lists(
    # Mostly what the fast path takes, so that queries of several pairs it takes are common.
    st.one_of(
        _KEPT_IN_QUERY,
        _KEPT_IN_QUERY,
        _KEPT_IN_QUERY,
        st.sampled_from(["utm_source", "fbclid", "UTM_x", "%41", "%2f", "+", " ", '"', "#", "\\", "é", "[", "^", "="]),
    ),
    max_size=4,
).map("".join)
_plain_queries = st.lists(
    st.tuples(_query_text, st.sampled_from(["=", "=", ""]), _query_text).map("".join), min_size=1, max_size=4
).map(lambda pairs: "?" + "&".join(pairs))


@settings(max_examples=2000, deadline=None)
@given(
    st.sampled_from(["http", "https", "HTTP"]),
    _plain_hosts,
    st.sampled_from(["", ".", ":80", ":443", ":8080", ":08080", ":65535", ":65536", ":0"]),
    st.none() | _plain_paths,
    st.sampled_from(["", "?a=1", "#f"]) | _plain_queries,
)
def test_urls_already_normal_skip_canonicalization_with_the_same_answer(scheme, host, dot_or_port, path, tail) -> None:
    url = f"{scheme}://{host}{dot_or_port}" + ("" if path is None else "/" + path) + tail
    try:
        expected = normalize.canonicalize(url)
    except InvalidURL:
        expected = None
    try:
        got = normalize.normalize(url)
    except InvalidURL:
        got = None
    assert got == expected


@settings(max_examples=2000, deadline=None)
@given(st.sampled_from(["http://a.example", "https://127.0.0.1:8080/p/", "http://b.example/x.html"]), _plain_queries)
def test_a_query_put_in_normal_form_without_the_full_way_is_its_normal_form(start: str, query: str) -> None:
    url = start + query
    assert normalize._plain_normal(url) in (None, normalize.canonicalize(url))


@pytest.mark.parametrize(
    ("url", "normal"),
    [
        (
            "https://bugs.python.org/issue?@action=redirect&bpo=43950",
            "https://bugs.python.org/issue?%40action=redirect&bpo=43950",
        ),
        ("http://a.example?b=2&a=1&utm_source=x", "http://a.example/?a=1&b=2"),
        ("http://a.example/p?utm_medium=&fbclid=1", "http://a.example/p"),
        ("http://a.example/p?q=a/b:c'd", "http://a.example/p?q=a%2Fb%3Ac%27d"),
        ("http://a.example/p?flag", None),  # a pair without "=": the full way
        ("http://a.example/p?a=%41", None),
        ("http://a.example/p?a=b+c", None),
    ],
)
def test_a_plain_query_is_put_in_normal_form_without_the_full_way(url: str, normal: str | None) -> None:
    assert normalize._plain_normal(url) == normal
    assert normalize.canonicalize(url) == (normal or normalize.canonicalize(url))

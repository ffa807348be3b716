"""Extraction from HTML: metadata, visible text, links, robots directives."""

from __future__ import annotations

import hashlib
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.extraction import RobotsDirectives, extract_page, parse_robots_directives
from crawler.extraction import html as extraction_html
from crawler.extraction.html import STR_ONLY_SPACES
from crawler.identity import normalize_url
from crawler.twins.simhash import simhash, simhash_of_utf8, simhash_of_words

COMPILED_MISSING = (
    "crawler/extraction/_walk.c or _links.c is not built: scripts/compile.sh builds them (it needs a C compiler)"
)


@pytest.fixture(autouse=True, params=["compiled", "python"])
def implementation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs with the walk and the reading of links in C, and with their Python
    versions."""
    if request.param == "compiled":
        assert extraction_html._compiled_walk is not None, COMPILED_MISSING
        assert extraction_html._compiled_collect is not None, COMPILED_MISSING
    else:
        monkeypatch.setattr(extraction_html, "_compiled_walk", None)
        monkeypatch.setattr(extraction_html, "_compiled_collect", None)
    return request.param


PAGE = """<!DOCTYPE html><html><head>
<title>  The   title </title>
<meta name="Description" content=" A  description ">
<link rel="canonical" href="/canonical?b=2&a=1">
<style>.hidden { display: none }</style>
<script>var secret = "script text";</script>
</head><body>
<h1>Heading</h1><p>First <b>para</b>graph.</p>
<noscript>noscript text</noscript><template><p>template text</p></template>
<a href="/a">A</a> <a href="b?utm_source=x#frag">B</a> <a href="/a">again</a>
<a href="/n" rel="external NoFollow">N</a> <a href="http://other.example/x">X</a>
<a href="mailto:someone@example.com">mail</a> <a href="javascript:void(0)">js</a>
<a href="tel:123">tel</a> <a href="#top">top</a> <a href="">empty</a> <a>no href</a>
<a href="http://exa mple.com/">bad</a> <area href="/area-link">
</body></html>"""


def test_metadata_text_and_hash() -> None:
    page = extract_page(PAGE, "http://site.example/dir/page", normalize_url)
    assert page.title == "The title"
    assert page.description == "A description"
    assert page.text == "Heading First paragraph. A B again N X mail js tel top empty no href bad"
    assert page.text_hash == hashlib.sha256(page.text.encode()).hexdigest()
    assert page.canonical == "http://site.example/canonical?a=1&b=2"


def test_links_are_absolute_normalized_deduplicated_and_filtered() -> None:
    page = extract_page(PAGE, "http://site.example/dir/page", normalize_url)
    assert page.links == [
        "http://site.example/a",
        "http://site.example/dir/b",
        "http://site.example/n",
        "http://other.example/x",
        "http://site.example/area-link",
    ]
    assert "http://site.example/n" not in page.followable
    assert len(page.followable) == 4
    assert page.invalid_links == 1


def test_a_link_both_nofollow_and_followable_is_followable() -> None:
    html = '<a href="/x" rel="nofollow">1</a><a href="/x">2</a>'
    page = extract_page(html, "http://s.example/", normalize_url)
    assert page.followable == ["http://s.example/x"]


def test_base_href_is_honoured() -> None:
    html = '<html><head><base href="http://cdn.example/root/"></head><body><a href="x">x</a></body></html>'
    assert extract_page(html, "http://s.example/p", normalize_url).links == ["http://cdn.example/root/x"]


def test_the_base_and_links_are_resolved_as_browsers_resolve_them() -> None:
    html = r'<head><base href="\\cdn.example\root\"></head><body><a href="x">x</a><a href="\y">y</a></body>'
    page = extract_page(html, "http://s.example/p", normalize_url)
    assert page.links == ["http://cdn.example/root/x", "http://cdn.example/y"]


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ('<meta name="robots" content="noindex">', RobotsDirectives(noindex=True)),
        ('<meta name="ROBOTS" content="NOINDEX, NOFOLLOW">', RobotsDirectives(True, True)),
        ('<meta name="robots" content="none">', RobotsDirectives(True, True)),
        ('<meta name="crawler" content="nofollow">', RobotsDirectives(nofollow=True)),
        ('<meta name="googlebot" content="noindex">', RobotsDirectives()),
        ('<meta name="robots" content="index, follow">', RobotsDirectives()),
    ],
)
def test_meta_robots(meta: str, expected: RobotsDirectives) -> None:
    html = f"<html><head>{meta}</head><body>x</body></html>"
    assert extract_page(html, "http://s.example/", normalize_url, ["crawler"]).robots == expected


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["noindex"], RobotsDirectives(noindex=True)),
        (["noindex, nofollow"], RobotsDirectives(True, True)),
        (["otherbot: noindex"], RobotsDirectives()),
        (["crawler: noindex"], RobotsDirectives(noindex=True)),
        (["unavailable_after: 25 Jun 2010 15:00:00 PST"], RobotsDirectives()),
        (["all", "nofollow"], RobotsDirectives(nofollow=True)),
        ([], RobotsDirectives()),
    ],
)
def test_x_robots_tag(values: list[str], expected: RobotsDirectives) -> None:
    assert parse_robots_directives(values, ["crawler"]) == expected


def test_empty_and_fragmentary_documents() -> None:
    for html in ["", "   ", "<html>", "plain text, no markup", "<title>only a title"]:
        page = extract_page(html, "http://s.example/", normalize_url)
        assert page.links == [] and isinstance(page.text, str)


@given(st.text(max_size=2000))
@settings(max_examples=200, deadline=None)
def test_any_text_extracts_without_error(html: str) -> None:
    page = extract_page(html, "http://s.example/", normalize_url)
    assert all(link.startswith("http") for link in page.links)


SPACES = "".join(character for character in map(chr, range(sys.maxunicode + 1)) if character.isspace())


def test_the_spaces_split_as_bytes_are_all_those_str_split_splits_on() -> None:
    assert set(STR_ONLY_SPACES) == set(SPACES) - set(" \t\n\r\x0b\x0c")


@given(st.text(alphabet=SPACES + "ab-é日\U0001f600", max_size=200))
@settings(max_examples=300, deadline=None)
def test_the_text_is_squashed_as_str_split_splits_and_its_words_are_those_fingerprinted(text: str) -> None:
    page = extract_page(f"<p>{text}</p>", "http://s.example/", normalize_url)
    assert page.text == " ".join(text.split())
    assert page.text_hash == hashlib.sha256(page.text.encode()).hexdigest()
    assert page.utf8 == page.text.encode()
    assert simhash_of_utf8(page.utf8) == simhash_of_words(page.utf8.split()) == simhash(page.text)


def test_invisible_parts_inside_one_another_are_left_out() -> None:
    html = (
        "<html><head><style>h</style><script>s</script></head><body>"
        "<noscript><script>a</script><p>b</p><svg><style>c</style></svg></noscript>"
        "<svg><text>d</text><foreignObject><div>e</div><template><p>f</p></template></foreignObject></svg>"
        "<div>one<b>word</b></div><template><script>g</script></template><li>two</li><br>three</body></html>"
    )
    assert extract_page(html, "http://s.example/", normalize_url).text == "oneword two three"


@pytest.mark.parametrize(
    ("head", "field", "expected"),
    [
        ('<base href><base href="/x/">', "links", ["http://s.example/a/p"]),  # the first base, empty: the page's URL
        ('<base href="http://[bad">', "links", ["http://s.example/a/p"]),
        ('<meta name=description content><meta name=description content="real">', "description", None),
        ('<link rel=canonical href><link rel=canonical href="/c">', "canonical", None),
    ],
)
def test_an_attribute_without_a_value_is_there_and_empty(head: str, field: str, expected: object) -> None:
    page = extract_page(
        f"<html><head>{head}</head><body><a href=p>p</a></body></html>", "http://s.example/a/", normalize_url
    )
    assert getattr(page, field) == expected

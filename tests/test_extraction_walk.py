"""The walk over a document that extraction reads: in C and in Python, with the same result
(tests/test_extraction.py runs every extraction test with each)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.extraction import html
from crawler.extraction.html import walk_in_python
from tests.test_extraction import COMPILED_MISSING, PAGE


def test_the_crawl_takes_the_compiled_walk() -> None:
    assert html._compiled_walk is not None, COMPILED_MISSING
    walked = html.walk(PAGE.encode())
    assert walked == walk_in_python(PAGE.encode())
    assert (walked.has_head, walked.title, walked.base) == (True, "  The   title ", None)
    assert walked.metas == [("Description", " A  description ")]
    assert walked.links == [("canonical", "/canonical?b=2&a=1")]
    assert walked.anchors[:2] == [("/a", None), ("b?utm_source=x#frag", None)]
    assert walked.anchors[3] == ("/n", "external NoFollow")


_SOUP_PARTS = [
    *"<p> <div> </div> <b> <br> <li> <td> <table> <select> <option> <svg> </svg> <math>".split(),
    *"<script> </script> <style> <noscript> </noscript> <template> </template> <head> <body> <frameset>".split(),
    *"<title> </title> <svg><title> <base> <meta> <link> <a> </a> <area> <foreignObject> <plaintext>".split(),
    '<a href="/x" rel="nofollow">',
    "<a href>",
    '<area href="y">',
    '<base href="/b/">',
    "<base href>",
    '<meta name="description" content="d">',
    "<meta name=robots content>",
    '<link rel="canonical" href="/c">',
    "<link rel href=/d>",
    '<svg><a xlink:href="/xl">',
    "<!-- c -->",
    "<![CDATA[cd]]>",
    "&amp;",
    "\x00",
    "text",
    " ",
    "日本",
    "\n",
    "é",
    "</body>",
    "</html>",
    "<html>",
]


_BYTES = [
    *(b"\xff", b"\xe6\x97", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x80", b"\x80"),  # not UTF-8
    *(b"\xc2\xa0", b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\x8a", b"\xe3\x80\x80", b"\x1c", b"\x1f", b"\x0b"),  # spaces
    *(b"\xe2\x80\x8b", b"\xe2\x81\xa0", b"\xf0\x9f\x98\x80", b"\xc2\xa9", b" ", b"\t", b"w"),  # neither
]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(_SOUP_PARTS), max_size=40), st.lists(st.sampled_from(_BYTES), max_size=8))
def test_the_compiled_walk_reads_what_the_python_walk_reads(parts: list[str], pieces: list[bytes]) -> None:
    assert html._compiled_walk is not None, COMPILED_MISSING
    document = "".join(parts).encode() + b"<p>" + b"".join(pieces) + b"<p>end"
    assert _read(html.walk(document)) == _read(walk_in_python(document))


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from(_SOUP_PARTS), max_size=40),
    st.lists(st.sampled_from(_BYTES), max_size=8),
    st.sampled_from([1, 2, 3, 5, 16]),
)
def test_a_document_parsed_in_chunks_is_walked_as_it_is_whole(
    parts: list[str], pieces: list[bytes], chunk: int
) -> None:
    assert html._compiled_walk is not None, COMPILED_MISSING
    document = "".join(parts).encode() + b"<p>" + b"".join(pieces) + b"<p>end"
    assert html._compiled_walk(document, html._KINDS, 0, chunk) == html._compiled_walk(document, html._KINDS)


def _read(walked: html.Walked) -> html.Walked:
    """As extraction reads it: the text squashed, its bytes not UTF-8 each replaced (as
    selectolax does)."""
    if walked.squashed:
        return walked
    text = " ".join(walked.text.decode("utf-8", "replace").split()).encode()
    return walked._replace(text=text, squashed=True)


def test_the_compiled_walk_takes_bytes_only() -> None:
    assert html._compiled_walk is not None, COMPILED_MISSING
    with pytest.raises(TypeError):
        html._compiled_walk("<p>", html._KINDS)  # type: ignore[arg-type]

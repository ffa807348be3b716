"""Sitemap parsing: crawler-commons' and Scrapy's cases, formats, and hostile documents."""

from __future__ import annotations

import base64
import gzip
import json
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urljoin

import pytest

from crawler.robots.rules import RobotsRules
from crawler.sitemaps import SitemapError, parse_sitemap
from crawler.sitemaps.dates import parse_date

CONFORMANCE = Path(__file__).resolve().parent / "conformance"

# Where this parser differs from crawler-commons on purpose.
CRAWLER_COMMONS_DEVIATIONS = {
    "ccsm-009": "broken XML is recovered rather than refused; the row lists the XML error, and the "
    "one readable entry is dropped here only by the strict cross-submit rule",
}

# Where this parser yields nothing (or refuses the document) and Scrapy's does not.
SCRAPY_DEVIATIONS = {
    "scrapysm-009": "Scrapy keeps a <loc> minus the entity it did not expand; that is not the URL the "
    "author meant, so the entry is dropped and named in the sitemap row's problems",
    "scrapysm-010": "a document whose root is <url> is not a sitemap: refused with a clear error",
}


def _crawler_commons_cases() -> list[dict]:
    return json.loads((CONFORMANCE / "sitemaps_crawler_commons.json").read_text())["cases"]


def _body(file: dict) -> bytes:
    return base64.b64decode(file["content_b64"]) if "content_b64" in file else file["text"].encode("utf-8")


def _as_utc(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def test_crawler_commons_documents() -> None:
    agree, disagree = [], []
    for case in _crawler_commons_cases():
        options = case["parser_options"]
        try:
            document = parse_sitemap(
                _body(case["files"][case["entry"]]),
                case["entry"],
                strict=options["strict"],
                strict_namespace=options["strict_namespace"],
            )
            urls, error = [e.loc for e in document.entries], None
        except SitemapError as exc:
            urls, error, document = [], str(exc), None
        same = urls == case["expected_urls"] and bool(error) == bool(case.get("expected_error"))
        if same and document is not None:
            lastmods = {e.loc: e.lastmod for e in document.entries if e.lastmod}
            expected = {url: _as_utc(value) for url, value in case.get("expected_lastmod", {}).items()}
            same = lastmods == expected
        (agree if same else disagree).append(case["id"])
    assert sorted(disagree) == sorted(CRAWLER_COMMONS_DEVIATIONS)
    assert len(agree) >= 48


def test_scrapy_sitemap_cases() -> None:
    data = json.loads((CONFORMANCE / "sitemaps_scrapy.json").read_text())
    for case in data["cases"]:
        body = case["sitemap_xml"].encode() if isinstance(case["sitemap_xml"], str) else case["sitemap_xml"]
        if case["id"] in SCRAPY_DEVIATIONS:
            try:
                assert parse_sitemap(body, "https://example.com/sitemap.xml").entries == []
            except SitemapError:
                pass
            continue
        document = parse_sitemap(body, "https://example.com/sitemap.xml")
        expected = [entry["loc"] for entry in case["expected_entries"]]
        assert [e.loc for e in document.entries] == expected, case["test"]
        if "expected_type" in case:
            assert document.kind == {"urlset": "urlset", "sitemapindex": "index"}[case["expected_type"]]
    for case in data["robots_sitemap_lines"]:
        assert _robots_sitemaps(case["robots_txt"], case["base_url"]) == case["expected_sitemaps"]


def _robots_sitemaps(robots_txt: str, robots_url: str) -> list[str]:
    """The sitemaps robots.txt lists, as the sitemap spider reads them."""
    return [urljoin(robots_url, url) for url in RobotsRules.parse(robots_txt, "*").sitemaps]


def test_robots_sitemap_lines_in_the_spellings_search_engines_accept() -> None:
    robots = "User-agent: *\nSitemap: /a.xml\nSitemaps: https://e.com/b.xml\nSite-map: c.xml\nsitemap /d.xml\n"
    assert _robots_sitemaps(robots, "https://e.com/robots.txt") == [f"https://e.com/{n}.xml" for n in "abcd"]


URLSET = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc> https://e.com/a </loc><lastmod>2024-01-02T03:04:05+02:00</lastmod><changefreq>Daily</changefreq><priority>0.9</priority></url>
<url><loc>https://e.com/b</loc><changefreq>sometimes</changefreq><priority>7</priority></url>
</urlset>"""


def test_urlset_fields() -> None:
    document = parse_sitemap(URLSET, "https://e.com/sitemap.xml")
    a, b = document.entries
    assert (a.loc, a.lastmod, a.changefreq, a.priority) == (
        "https://e.com/a",
        datetime(2024, 1, 2, 1, 4, 5, tzinfo=UTC),
        "daily",
        0.9,
    )
    assert (b.loc, b.lastmod, b.changefreq, b.priority) == ("https://e.com/b", None, None, None)


def test_gzip_is_detected_by_content_whatever_the_name() -> None:
    document = parse_sitemap(gzip.compress(URLSET), "https://e.com/plain-name")
    assert [e.loc for e in document.entries] == ["https://e.com/a", "https://e.com/b"]


def test_gzip_bomb_is_refused() -> None:
    bomb = gzip.compress(b"\0" * (3 * 1024 * 1024))
    with pytest.raises(SitemapError, match="exceeded"):
        parse_sitemap(bomb, "https://e.com/s.xml.gz", max_size=1024 * 1024)


def test_corrupt_gzip_is_refused() -> None:
    with pytest.raises(SitemapError, match="gzip"):
        parse_sitemap(b"\x1f\x8b\x08\x00garbage", "https://e.com/s.xml.gz")


def test_entities_are_never_expanded() -> None:
    laughs = (
        b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
        b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><urlset><url><loc>https://e.com/&c;</loc></url>'
        b"<url><loc>https://e.com/ok</loc></url></urlset>"
    )
    document = parse_sitemap(laughs, "https://e.com/s.xml")
    assert [e.loc for e in document.entries] == ["https://e.com/ok"]
    assert any("empty location" in p for p in document.problems)


def test_external_entities_are_not_read(tmp_path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("https://e.com/leaked")
    xxe = (
        f'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY x SYSTEM "file://{secret}">]>'
        "<urlset><url><loc>&x;</loc></url></urlset>"
    ).encode()
    assert parse_sitemap(xxe, "https://e.com/s.xml").entries == []


def test_index_listing_itself_is_returned_for_the_caller_to_guard() -> None:
    index = b"<sitemapindex><sitemap><loc>https://e.com/i.xml</loc></sitemap></sitemapindex>"
    document = parse_sitemap(index, "https://e.com/i.xml")
    assert document.is_index and [e.loc for e in document.entries] == ["https://e.com/i.xml"]


def test_text_sitemap() -> None:
    body = b"https://e.com/1\n\n  https://e.com/2  \nnot a url\nwww.e.com/3\r\nhttps://e.com/4#frag\n"
    document = parse_sitemap(body, "https://e.com/s.txt")
    assert [e.loc for e in document.entries] == [
        "https://e.com/1",
        "https://e.com/2",
        "http://www.e.com/3",
        "https://e.com/4",
    ]
    assert document.kind == "text" and len(document.problems) == 1


def test_non_sitemap_text_and_unknown_xml_are_refused() -> None:
    with pytest.raises(SitemapError):
        parse_sitemap(b"<html><body>hello</body></html>", "https://e.com/s.xml")
    with pytest.raises(SitemapError):
        parse_sitemap(b"just some words", "https://e.com/s.txt")
    with pytest.raises(SitemapError):
        parse_sitemap(b"", "https://e.com/s.xml")


def test_rss_and_atom() -> None:
    rss = b"<rss><channel><item><link>https://e.com/p</link><pubDate>Sun, 06 Sep 2009 16:20:00 +0000</pubDate></item></channel></rss>"
    (entry,) = parse_sitemap(rss, "https://e.com/feed").entries
    assert entry.loc == "https://e.com/p" and entry.lastmod == datetime(2009, 9, 6, 16, 20, tzinfo=UTC)
    atom = b'<feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="/post"/><updated>2003-12-13T18:30:02Z</updated></entry></feed>'
    (entry,) = parse_sitemap(atom, "https://e.com/atom.xml").entries
    assert entry.loc == "https://e.com/post" and entry.lastmod == datetime(2003, 12, 13, 18, 30, 2, tzinfo=UTC)


def test_atom_0_3_dates_and_the_last_change_before_the_publication() -> None:
    atom03 = (
        b'<feed version="0.3" xmlns="http://purl.org/atom/ns#">'
        b'<entry><link rel="alternate" type="text/html" href="https://e.com/a"/>'
        b"<issued>2003-12-13T08:29:29-04:00</issued><modified>2003-12-13T18:30:02Z</modified></entry>"
        b'<entry><link href="https://e.com/b"/><issued>2004-01-02T03:04:05Z</issued></entry></feed>'
    )
    a, b = parse_sitemap(atom03, "https://e.com/atom.xml").entries
    assert (a.loc, a.lastmod) == ("https://e.com/a", datetime(2003, 12, 13, 18, 30, 2, tzinfo=UTC))
    assert (b.loc, b.lastmod) == ("https://e.com/b", datetime(2004, 1, 2, 3, 4, 5, tzinfo=UTC))
    atom10 = (
        b'<feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="https://e.com/c"/>'
        b"<published>2020-01-01T00:00:00Z</published><updated>not a date</updated>"
        b"<updated>2021-06-07T08:09:10Z</updated></entry></feed>"
    )
    (c,) = parse_sitemap(atom10, "https://e.com/atom.xml").entries
    assert c.lastmod == datetime(2021, 6, 7, 8, 9, 10, tzinfo=UTC)


INDEX = b"""<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>https://e.com/s1.xml</loc><lastmod>2024-01-01</lastmod></sitemap>
<sitemap><loc>https://e.com/s2.xml</loc></sitemap>
</sitemapindex>"""
RSS = b"""<rss version="2.0"><channel><link>https://e.com/</link>
<item><link>https://e.com/news/1</link><pubDate>Sun, 06 Sep 2009 16:20:00 +0000</pubDate></item>
<item><guid>https://e.com/news/2</guid></item>
</channel></rss>"""
ATOM = b"""<feed xmlns="http://www.w3.org/2005/Atom"><link href="https://e.com/"/>
<entry><link href="https://e.com/post/1"/><updated>2003-12-13T18:30:02Z</updated></entry>
<entry><link rel="alternate" href="https://e.com/post/2"/></entry>
</feed>"""


@pytest.mark.parametrize("document", [URLSET, INDEX, RSS, ATOM], ids=["urlset", "index", "rss", "atom"])
def test_a_document_cut_anywhere_yields_no_partial_value(document: bytes) -> None:
    whole = parse_sitemap(document, "https://e.com/sitemap.xml").entries
    for end in range(1, len(document)):
        try:
            entries = parse_sitemap(document[:end], "https://e.com/sitemap.xml").entries
        except SitemapError:  # cut before the root element was read
            continue
        # Each entry read is one of the whole document's, without the fields cut off.
        assert [e.loc for e in entries] == [e.loc for e in whole[: len(entries)]], document[:end]
        for entry, expected in zip(entries, whole):
            assert entry.lastmod in (None, expected.lastmod), document[:end]
            assert entry.changefreq in (None, expected.changefreq), document[:end]
            assert entry.priority in (None, expected.priority), document[:end]


def test_an_entry_cut_short_inside_its_loc_is_dropped_and_named() -> None:
    cut = URLSET[: URLSET.index(b"https://e.com/b") + len(b"https://e.com/")]
    document = parse_sitemap(cut, "https://e.com/sitemap.xml")
    assert [e.loc for e in document.entries] == ["https://e.com/a"]
    assert document.problems[0].startswith("malformed XML")
    assert document.problems[1] == "cut short inside its last entry, which was dropped"


def test_a_document_cut_between_entries_keeps_them_all() -> None:
    cut = URLSET[: URLSET.rindex(b"</urlset>")]
    document = parse_sitemap(cut, "https://e.com/sitemap.xml")
    assert [e.loc for e in document.entries] == ["https://e.com/a", "https://e.com/b"]
    assert len(document.problems) == 1 and document.problems[0].startswith("malformed XML")


def test_size_cap_applies_to_plain_documents() -> None:
    with pytest.raises(SitemapError, match="larger"):
        parse_sitemap(b"https://e.com/x\n" * 1000, "https://e.com/s.txt", max_size=1000)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024", datetime(2024, 1, 1, tzinfo=UTC)),
        ("2024-05", datetime(2024, 5, 1, tzinfo=UTC)),
        ("2024-05-06", datetime(2024, 5, 6, tzinfo=UTC)),
        ("2024-05-06T07:08Z", datetime(2024, 5, 6, 7, 8, tzinfo=UTC)),
        ("2024-05-06T07:08:09.5-01:30", datetime(2024, 5, 6, 8, 38, 9, 500000, tzinfo=UTC)),
        ("2024-05-06 07:08:09", datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)),
        ("Mon, 06 Sep 2010 00:01:00 +0000", datetime(2010, 9, 6, 0, 1, tzinfo=UTC)),
        ("2024-13-01", None),
        ("yesterday", None),
        ("", None),
        (None, None),
    ],
)
def test_dates(text: str | None, expected: datetime | None) -> None:
    assert parse_date(text) == expected

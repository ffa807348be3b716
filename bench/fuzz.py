"""Fuzz the code that reads what the web sends: robots.txt, sitemaps, HTML extraction, URL
normal forms, the address guard and content sniffing, with hypothesis, for minutes.

``python -m bench.fuzz [--minutes 5] [--target robots …]``: each target runs for its share of
the time, in rounds of random examples (no example database, new seeds every round). An
exception that the code under test does not promise (``SitemapError``, ``InvalidURL``) is
reported with the smallest input hypothesis finds for it. Prints examples run per target and
the unexpected exceptions; exits 1 if there was any.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawler.extraction import extract_page
from crawler.guard import AddressPolicy
from crawler.http.sniff import binary_kind
from crawler.identity import InvalidURL, UrlNormalizer
from crawler.robots.rules import RobotsRules
from crawler.sitemaps import SitemapError, parse_sitemap

ROUND = settings(max_examples=200, deadline=None, database=None, suppress_health_check=list(HealthCheck))
NORMALIZE = UrlNormalizer()

# --- inputs that look like what they attack, and some that do not ------------------------------
_url_chars = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
_schemes = st.sampled_from(["http", "https", "HTTP", "ftp", "javascript", ""])
_hosts = st.sampled_from(
    [
        "a.example",
        "A.Example.",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "[::1",
        "0x7f.1",
        "2130706433",
        "ex ample",
        "xn--e1afmkfd",
        "\u00e9xample.com",
        "",
        "a.example:99999",
        "a.example:80",
        "a.example:",
        "user:pw@h.example",
        "%41.example",
        "a..b",
    ]
)
_paths = st.text(alphabet="/?#&=%.:@;+ab\u00e9\x00\t ", max_size=30)
urls = st.one_of(
    _url_chars, st.builds("{}://{}{}".format, _schemes, _hosts, _paths), st.builds("{}{}".format, _hosts, _paths)
)
_robots_lines = st.sampled_from(
    [
        "User-agent: *",
        "User-agent: crawler",
        "User-agent: Crawler/2.0 (x)",
        "user agent crawler",
        "Disallow: /",
        "Disallow:",
        "Allow: /a$",
        "Disallow: /*?q=",
        "Disallow: /%2F",
        "Crawl-delay: 1e309",
        "Crawl-delay: -3",
        "Crawl-delay: nan",
        "Sitemap: /s.xml",
        "Sitemap: http://[::1/",
        "Host: x",
        "Disallow /nocolon",
        "#comment",
        "",
        "Disallow: /\u00e9\u00e8",
        "Allow: *",
        "Disallow: $",
    ]
)
robots_bodies = st.one_of(
    st.binary(max_size=2000),
    st.lists(st.one_of(_robots_lines, st.text(max_size=40)), max_size=40).map("\n".join),
)
_tags = st.sampled_from(
    [
        "div",
        "p",
        "a",
        "base",
        "meta",
        "link",
        "title",
        "script",
        "svg",
        "table",
        "td",
        "br",
        "head",
        "body",
        "html",
        "template",
        "noscript",
    ]
)
_attrs = st.sampled_from(
    ['href="{}"', 'name="robots" content="{}"', 'rel="{}"', 'http-equiv="refresh" content="{}"', "href='{}'", "{}"]
)


_html_parts = st.one_of(
    st.builds("<{} {}>".format, _tags, st.builds(str.format, _attrs, urls)),
    st.builds("</{}>".format, _tags),
    st.text(max_size=20),
)
html_documents = st.lists(_html_parts, max_size=40).map("".join)


@st.composite
def sitemap_bodies(draw: Callable) -> bytes:
    kind = draw(st.sampled_from(["urlset", "sitemapindex", "rss", "feed", "text", "binary", "doctype"]))
    if kind == "binary":
        return draw(st.binary(max_size=2000))
    locs = draw(st.lists(urls, max_size=10))
    if kind == "text":
        body = "\n".join(locs)
    else:
        fields = "".join(
            f"<url><loc>{loc}</loc><lastmod>{draw(st.text(max_size=25))}</lastmod>"
            f"<priority>{draw(st.text(max_size=5))}</priority><changefreq>{draw(st.text(max_size=8))}</changefreq></url>"
            for loc in locs
        )
        head = (
            '<!DOCTYPE urlset [<!ENTITY a "x"><!ENTITY e SYSTEM "file:///etc/hostname">]>' if kind == "doctype" else ""
        )
        root = "urlset" if kind == "doctype" else kind
        body = (
            f'<?xml version="1.0"?>{head}<{root} xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{fields}</{root}>'
        )
        if draw(st.booleans()):  # cut anywhere
            body = body[: draw(st.integers(0, len(body)))]
    data = body.encode("utf-8", "surrogatepass")
    return gzip.compress(data) if draw(st.booleans()) else data


# --- targets: each runs one input through the code and returns nothing ---------------------------
@ROUND
@given(robots_bodies, st.lists(urls, max_size=5))
def fuzz_robots(body: bytes | str, probes: list[str]) -> None:
    rules = RobotsRules.parse(body, "crawler")
    for url in probes:
        rules.decide(url)


@ROUND
@given(sitemap_bodies(), urls)
def fuzz_sitemap(body: bytes, url: str) -> None:
    try:
        parse_sitemap(body, url or "http://s.example/sitemap.xml", max_size=1024 * 1024)
    except SitemapError:
        pass


@ROUND
@given(html_documents, urls)
def fuzz_html(document: str, url: str) -> None:
    try:
        base = NORMALIZE(url)
    except InvalidURL:
        base = "http://h.example/"
    extract_page(document, base, NORMALIZE, ["crawler"], max_links=1000)


@ROUND
@given(urls)
def fuzz_url(url: str) -> None:
    try:
        normal = NORMALIZE.normalize(url)
    except InvalidURL:
        return
    assert NORMALIZE.normalize(normal) == normal, (url, normal)  # the normal form is stable


@ROUND
@given(st.one_of(st.text(max_size=40), st.from_regex(r"\A\[?[0-9a-fA-FxX.:%]{0,45}\]?\Z")))
def fuzz_address_guard(host: str) -> None:
    AddressPolicy().check_host(host)


@ROUND
@given(st.binary(max_size=3000))
def fuzz_sniff(body: bytes) -> None:
    binary_kind(body)


TARGETS: dict[str, Callable[[], None]] = {
    "robots": fuzz_robots,
    "sitemap": fuzz_sitemap,
    "html": fuzz_html,
    "url": fuzz_url,
    "address_guard": fuzz_address_guard,
    "sniff": fuzz_sniff,
}


def run(name: str, seconds: float) -> tuple[int, list[str]]:
    """Examples run and unexpected exceptions (with their smallest input) for one target."""
    test = TARGETS[name]
    inner = test.hypothesis.inner_test  # count every example hypothesis runs
    counter = Counter[str]()

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        counter["examples"] += 1
        return inner(*args, **kwargs)

    test.hypothesis.inner_test = counted
    problems: list[str] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            test()
        except Exception:  # hypothesis re-raises the failure of the smallest example
            problems.append(traceback.format_exc(limit=-4))
    test.hypothesis.inner_test = inner
    return counter["examples"], problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=5.0, help="total time, shared by the targets")
    parser.add_argument("--target", action="append", choices=sorted(TARGETS), help="fuzz only these (repeatable)")
    args = parser.parse_args(argv)
    names = args.target or list(TARGETS)
    share = args.minutes * 60 / len(names)
    unexpected = 0
    print(f"{'target':<14} {'examples':>10} {'examples/s':>11} {'unexpected':>11}")
    for name in names:
        started = time.monotonic()
        examples, problems = run(name, share)
        elapsed = time.monotonic() - started
        unexpected += len(problems)
        print(f"{name:<14} {examples:>10} {examples / elapsed:>11.0f} {len(problems):>11}", flush=True)
        for problem in problems:
            print(problem, file=sys.stderr)
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())

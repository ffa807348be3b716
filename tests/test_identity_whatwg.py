"""Links read as browsers read them: web-platform-tests' URL cases (``conformance/url_wpt.json``),
the suite browsers are tested with.

A case concerns the crawler when it says what a browser does with an http(s) URL: its result is
one, or it fails on an http(s) page, or it fails without a base on an input that names http(s).
A case with a base is a link on the page at that base (``LinkResolver``); one without is an
absolute URL, as seeds and sitemaps give them (``normalize_url``). The crawler agrees with the
browser when it gives the normal form of the browser's URL, or nothing where the browser fails.
"""

from __future__ import annotations

import json
from pathlib import Path

from crawler.identity import InvalidURL, normalize_url
from crawler.identity.resolve import LinkResolver

CONFORMANCE = Path(__file__).resolve().parent / "conformance" / "url_wpt.json"
CASES = [case for case in json.loads(CONFORMANCE.read_text(encoding="utf-8"))["cases"] if isinstance(case, dict)]

# Where the crawler differs from a browser on purpose: a host no DNS name can be, so that a
# browser's lookup fails and a link to it leads nowhere; its normal form refuses it.
DEVIATIONS = {
    "http://./": "a host of empty labels",
    "http://../": "a host of empty labels",
    "http://foo.09..": "a host with an empty label (a browser keeps both dots)",
    "http://!\"$&'()*+,-.;=_`{}~/": "a host of characters no DNS name has",
}

_HTTP = ("http:", "https:")
_C0_OR_SPACE = "".join(map(chr, range(0x21)))  # what the URL Standard strips around an input
_resolver = LinkResolver(normalize_url)


def _names_http(url: str) -> bool:
    return url.lstrip(_C0_OR_SPACE).lower().startswith(_HTTP)


def concerns_http(case: dict) -> bool:
    if "href" in case:
        return case["href"].startswith(_HTTP)
    return _names_http(case["input"]) if case["base"] is None else case["base"].startswith(_HTTP)


def crawler_answer(case: dict) -> str | None:
    """The crawler's URL for a case, None where it follows nothing."""
    if case["base"] is None:
        try:
            return normalize_url(case["input"])
        except InvalidURL:
            return None
    return _resolver.for_base(case["base"])(case["input"])


def browser_answer(case: dict) -> str | None:
    """The normal form of the browser's URL, None where the browser fails."""
    return None if case.get("failure") else normalize_url(case["href"])


def test_http_cases_agree_with_browsers() -> None:
    http_cases = [case for case in CASES if concerns_http(case)]
    differences = {}
    for case in http_cases:
        try:
            expected = browser_answer(case)
        except InvalidURL as exc:
            expected = f"refused by the normal form: {exc}"
        got = crawler_answer(case)
        if got != expected:
            differences[case["input"]] = (case["base"], got, expected)
    assert differences.keys() == DEVIATIONS.keys(), differences
    # 429 of the 433 cases that concern http(s) (229 results, 204 failures): 99.1 %.
    assert (len(http_cases), len(http_cases) - len(differences)) == (433, 429)


def _as_link_too(case: dict) -> list[str | None]:
    """The crawler's answers for a case: as given, and for an absolute http(s) URL given without
    a base, as a link on a page of the other scheme, which the URL Standard reads the same."""
    answers = [crawler_answer(case)]
    if case["base"] is None and _names_http(case["input"]):
        scheme = case["input"].lstrip(_C0_OR_SPACE).lower().partition(":")[0]
        page = "http://example.org/" if scheme == "https" else "https://example.org/"
        answers.append(_resolver.for_base(page)(case["input"]))
    return answers


def test_no_link_a_browser_refuses_is_followed() -> None:
    failures = [case for case in CASES if case.get("failure")]
    answers = {(case["input"], case["base"]): _as_link_too(case) for case in failures}
    assert {case: urls for case, urls in answers.items() if any(urls)} == {}
    assert len(failures) == 273  # every failure of the file, of any scheme

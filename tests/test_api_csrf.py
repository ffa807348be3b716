"""Which state changes are refused as coming from another page, and which bodies: every value of
Sec-Fetch-Site, Origins of this server and of its neighbours (another port, scheme, host), no
header at all (curl), and the content types a form or a no-cors fetch can send."""

from __future__ import annotations

import pytest

from crawler.api.csrf import STATE_CHANGING, cross_site, origin, unsafe_body

OWN = "http://127.0.0.1:8700"


@pytest.mark.parametrize(
    ("scheme", "host", "expected"),
    [
        ("http", "127.0.0.1:8700", "http://127.0.0.1:8700"),
        ("HTTP", "Crawler.Example", "http://crawler.example"),
        ("http", "crawler.example:80", "http://crawler.example"),
        ("https", "crawler.example:443", "https://crawler.example"),
        ("https", "crawler.example:80", "https://crawler.example:80"),
        ("http", "crawler.example:443", "http://crawler.example:443"),
        ("http", "[::1]:8700", "http://[::1]:8700"),
        ("http", "[::1]", "http://[::1]"),
        ("http", "[::1]:80", "http://[::1]"),
    ],
)
def test_an_origin_as_browsers_write_it(scheme: str, host: str, expected: str) -> None:
    assert origin(scheme, host) == expected


@pytest.mark.parametrize("fetch_site", ["same-origin", "none", "Same-Origin", " same-origin "])
def test_the_dashboards_own_requests_pass_whatever_origin_says(fetch_site: str) -> None:
    # Sec-Fetch-Site decides where a browser sends it: behind a proxy that rewrites Host, Origin
    # and Host differ for the server's own pages.
    assert cross_site(fetch_site, "https://crawler.example", OWN) is None


@pytest.mark.parametrize("fetch_site", ["same-site", "cross-site", "", "something-new"])
@pytest.mark.parametrize("request_origin", [None, OWN, "http://127.0.0.1:9999"])
def test_another_page_of_the_same_site_or_another_site_is_refused(fetch_site: str, request_origin: str | None) -> None:
    assert cross_site(fetch_site, request_origin, OWN) is not None


@pytest.mark.parametrize(
    ("request_origin", "refused"),
    [
        (OWN, False),
        ("HTTP://127.0.0.1:8700", False),
        ("http://127.0.0.1:8700 ", False),
        ("http://127.0.0.1:9999", True),  # another port of the same host: same site, not same origin
        ("https://127.0.0.1:8700", True),
        ("http://127.0.0.2:8700", True),
        ("http://localhost:8700", True),
        ("http://127.0.0.1", True),
        ("null", True),  # sandboxed frames, some redirects, file: pages
        ("", True),
        ("127.0.0.1:8700", True),
    ],
)
def test_without_sec_fetch_site_the_origin_must_be_this_servers(request_origin: str, refused: bool) -> None:
    assert (cross_site(None, request_origin, OWN) is not None) is refused


def test_a_default_port_is_the_same_origin_written_either_way() -> None:
    assert cross_site(None, "https://crawler.example", origin("https", "crawler.example:443")) is None
    assert cross_site(None, "https://crawler.example:443", origin("https", "crawler.example")) is None


def test_a_program_that_sends_neither_header_passes() -> None:
    assert cross_site(None, None, OWN) is None


def test_the_refusal_says_why_and_quotes_no_more_than_a_line() -> None:
    reason = cross_site(None, "http://evil.example/" + "x" * 10_000, OWN)
    assert reason is not None and "another origin" in reason and len(reason) < 200
    reason = cross_site("same-site" + "x" * 10_000, None, OWN)
    assert reason is not None and "same-site" in reason and len(reason) < 200


@pytest.mark.parametrize(
    ("content_type", "has_body", "refused"),
    [
        ("application/json", True, False),
        ("application/json; charset=utf-8", True, False),
        ("Application/JSON", True, False),
        ("application/json", False, False),
        (None, False, False),  # curl -X POST, the dashboard's bodiless buttons
        # what a form or a no-cors fetch can send
        ("application/x-www-form-urlencoded", True, True),
        ("application/x-www-form-urlencoded", False, True),
        ("multipart/form-data; boundary=x", True, True),
        ("text/plain", True, True),
        ("text/plain;charset=UTF-8", True, True),
        (None, True, True),  # a Blob without a type
        # anything else is not JSON either
        ("application/xml", True, True),
        ("application/json-seq", True, True),
        ("", True, True),
    ],
)
def test_a_state_change_carries_json_or_no_body(content_type: str | None, has_body: bool, refused: bool) -> None:
    assert (unsafe_body(content_type, has_body) is not None) is refused


def test_every_method_that_changes_state_is_checked() -> None:
    assert STATE_CHANGING == {"POST", "PUT", "PATCH", "DELETE"}

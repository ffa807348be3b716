"""The audit for people: the text report of a summary, line by line, and the hint for a name that
means no stored domain."""

from __future__ import annotations

from datetime import UTC, datetime

from crawler.control.audit_report import findings, text_report
from crawler.control.domain_names import HINT_LISTED, NamedDomains
from crawler.control.site_audit import MAX_LISTED, summarize

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC).timestamp()


def _row(start: float, path: str, delay: float | None = 0.5, status: int | None = 200) -> dict:
    return {
        "url": f"http://127.0.0.17:8080{path}",
        "started_at": T0 + start,
        "ended_at": T0 + start + 0.05,
        "http_status": status,
        "outcome": "response" if status else "TimeoutError",
        "delay_in_force": delay,
    }


def test_the_text_report_of_a_site() -> None:
    rows = [
        _row(0, "/robots.txt", delay=1.0),
        _row(1.0, "/"),
        _row(1.3, "/a", status=429),
        _row(3.0, "/b", status=None),
    ]
    decisions = [{"url": "http://127.0.0.17:8080/private/x", "allowed": False, "matched_rule": "Disallow: /private"}]
    assert text_report("127.0.0.17:8080", summarize(rows, 0.01, decisions)) == "\n".join(
        [
            "127.0.0.17:8080: 4 requests from 2025-03-01T12:00:00+00:00 to 2025-03-01T12:00:03+00:00",
            "  outcomes: 200 x2, 429 x1, TimeoutError x1",
            "  smallest gap between two starts: 0.300 s (delay in force 0.500 s) at 2025-03-01T12:00:01.300000+00:00",
            "  gaps shorter than the delay (tolerance 0.010 s): 1",
            "    2025-03-01T12:00:01.300000+00:00: 0.300 s < 0.500 s,"
            " http://127.0.0.17:8080/ -> http://127.0.0.17:8080/a",
            "  most in flight at once: 1 (from 2025-03-01T12:00:00+00:00)",
            "  429 answers: 1",
            "    2025-03-01T12:00:01.350000+00:00: http://127.0.0.17:8080/a, next request 1.650 s later",
            "  robots.txt decisions:",
            "    disallowed x1 by Disallow: /private (e.g. http://127.0.0.17:8080/private/x)",
        ]
    )


def test_the_text_report_of_a_site_not_visited_in_the_window() -> None:
    assert text_report("a.example", summarize([], 0.01)) == "\n".join(
        [
            "a.example: 0 requests",
            "  gaps shorter than the delay (tolerance 0.010 s): 0",
            "  429 answers: 0",
            "  robots.txt decisions: none",
        ]
    )


def test_the_report_says_how_many_were_not_listed() -> None:
    rows = [_row(n * 0.1, f"/{n}", status=429) for n in range(MAX_LISTED + 4)]
    found = {finding.label: finding for finding in findings(summarize(rows, 0.01))}
    short = found["gaps shorter than the delay (tolerance 0.010 s)"]
    assert short.value == str(MAX_LISTED + 3) and short.details[-1] == "… and 3 more"
    assert len(short.details) == MAX_LISTED + 1
    assert found["429 answers"].details[-1] == "… and 4 more"


def test_the_hint_names_the_stored_domains_that_start_with_the_host() -> None:
    nearby = ["127.0.0.12:8080", "127.0.0.120:80"]
    assert NamedDomains("127.0.0.12:9", [], nearby).hint() == (
        "known domains starting with 127.0.0.12: 127.0.0.12:8080, 127.0.0.120:80"
    )
    assert NamedDomains("nothing.example", [], []).hint() == "no known domain starts with nothing.example"
    many = [f"a{n:02}.example" for n in range(HINT_LISTED + 2)]
    assert NamedDomains("a", [], many).hint() == (
        "known domains starting with a: " + ", ".join(many[:HINT_LISTED]) + " and 2 more"
    )

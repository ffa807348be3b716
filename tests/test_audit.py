"""``scrapy audit`` as an operator runs it, on request logs written to either backend: a domain
named with or without its port, one report per port, the hint for a name that means nothing,
and the HTML page written beside the text."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from crawler.storage import open_backend
from crawler.storage.backend import Batch
from tests.helpers import Database, run_scrapy

pytestmark = pytest.mark.integration

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def _logged(domain: str, path: str, at: float, delay: float, status: int = 200) -> tuple:
    start = T0 + timedelta(seconds=at)
    url = f"http://{domain}{path}"
    return (domain, url, "job", "worker", start, start + timedelta(seconds=0.05), status, "response", delay)


@pytest.fixture
def logged(database: Database) -> Database:
    """Requests to one host on two ports, to a host whose name begins with the first's, and to a
    host with an underscore (a wildcard of SQL's LIKE)."""
    rows = [
        _logged("127.0.0.17:8080", "/robots.txt", 0, 1.0),
        _logged("127.0.0.17:8080", "/a", 1.0, 0.5),
        _logged("127.0.0.17:8080", "/b", 1.3, 0.5, status=429),
        _logged("127.0.0.12:8080", "/", 0, 1.0),
        _logged("127.0.0.12:8081", "/", 0.2, 1.0),
        _logged("127.0.0.12:8081", "/x", 1.2, 1.0),
        _logged("127.0.0.120:80", "/", 0, 1.0),
        _logged("a_b.example", "/", 0, 1.0),
        _logged("axb.example", "/", 0, 1.0),
    ]

    async def write() -> None:
        backend = open_backend(database.url)
        await backend.open()
        await backend.write(Batch(request_log=rows))
        await backend.close()

    asyncio.run(write())
    return database


REPORT_17 = """\
127.0.0.17:8080: 3 requests from 2025-03-01T12:00:00+00:00 to 2025-03-01T12:00:01.300000+00:00
  outcomes: 200 x2, 429 x1
  smallest gap between two starts: 0.300 s (delay in force 0.500 s) at 2025-03-01T12:00:01.300000+00:00
  gaps shorter than the delay (tolerance 0.010 s): 1
    2025-03-01T12:00:01.300000+00:00: 0.300 s < 0.500 s, http://127.0.0.17:8080/a -> http://127.0.0.17:8080/b
  most in flight at once: 1 (from 2025-03-01T12:00:00+00:00)
  429 answers: 1
    2025-03-01T12:00:01.350000+00:00: http://127.0.0.17:8080/b, no request after it
  robots.txt decisions: none
"""


@pytest.mark.parametrize("name", ["127.0.0.17", "127.0.0.17:8080", "127.0.0.17:8080 "])
def test_a_host_with_one_port_is_found_with_or_without_it(logged: Database, name: str) -> None:
    result = run_scrapy(logged, "audit", name)
    assert (result.returncode, result.stdout, result.stderr) == (0, REPORT_17, "")


def test_a_host_without_its_port_means_every_port_of_it_each_reported_alone(logged: Database) -> None:
    result = run_scrapy(logged, "audit", "127.0.0.12")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "127.0.0.12:8080: 1 requests from 2025-03-01T12:00:00+00:00 to 2025-03-01T12:00:00+00:00\n"
        "  outcomes: 200 x1\n"
        "  gaps shorter than the delay (tolerance 0.010 s): 0\n"
        "  most in flight at once: 1 (from 2025-03-01T12:00:00+00:00)\n"
        "  429 answers: 0\n"
        "  robots.txt decisions: none\n"
        "\n"
        "127.0.0.12:8081: 2 requests from 2025-03-01T12:00:00.200000+00:00 to 2025-03-01T12:00:01.200000+00:00\n"
        "  outcomes: 200 x2\n"
        "  smallest gap between two starts: 1.000 s (delay in force 1.000 s) at 2025-03-01T12:00:01.200000+00:00\n"
        "  gaps shorter than the delay (tolerance 0.010 s): 0\n"
        "  most in flight at once: 1 (from 2025-03-01T12:00:00.200000+00:00)\n"
        "  429 answers: 0\n"
        "  robots.txt decisions: none\n"
    )  # the gap between the ports is no gap: each port is paced on its own
    summaries = json.loads(run_scrapy(logged, "audit", "127.0.0.12", "--json").stdout)
    assert {domain: summary["requests"] for domain, summary in summaries.items()} == {
        "127.0.0.12:8080": 1,
        "127.0.0.12:8081": 2,
    }
    assert (
        json.loads(run_scrapy(logged, "audit", "127.0.0.120", "--json").stdout)["requests"] == 1
    )  # one domain: its summary


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        (
            "127.0.0.1",
            "scrapy audit: no requests logged for 127.0.0.1; known domains starting with 127.0.0.1:"
            " 127.0.0.12:8080, 127.0.0.12:8081, 127.0.0.120:80, 127.0.0.17:8080",
        ),
        (
            "127.0.0.12:9999",
            "scrapy audit: no requests logged for 127.0.0.12:9999; known domains starting with 127.0.0.12:"
            " 127.0.0.12:8080, 127.0.0.12:8081, 127.0.0.120:80",
        ),
        (
            "a_",
            "scrapy audit: no requests logged for a_; known domains starting with a_: a_b.example",
        ),
        (
            "nothing.example",
            "scrapy audit: no requests logged for nothing.example; no known domain starts with nothing.example",
        ),
    ],
)
def test_a_name_that_means_no_domain_gets_a_one_line_hint(logged: Database, name: str, hint: str) -> None:
    result = run_scrapy(logged, "audit", name)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", hint + "\n")


def test_an_underscore_is_a_character_not_a_wildcard(logged: Database) -> None:
    result = run_scrapy(logged, "audit", "a_b.example", "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["requests"] == 1


def test_the_html_page_is_written_beside_the_text(logged: Database, tmp_path: Path) -> None:
    page = tmp_path / "audit.html"
    result = run_scrapy(logged, "audit", "127.0.0.17", "--html", str(page))
    assert (result.returncode, result.stdout, result.stderr) == (0, REPORT_17, f"HTML report written to {page}\n")
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and 'data-domain="127.0.0.17:8080"' in html
    assert html.count('<circle class="gap') == 2 and html.count('<circle class="gap short"') == 1

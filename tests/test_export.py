"""``scrapy export``: the rows of a crawl as JSON Lines or CSV, filtered, from either backend."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from crawler.items import PageItem
from crawler.outcomes import page_item
from crawler.storage import open_backend
from crawler.storage.backend import Batch
from crawler.storage.rows import page_row
from tests.helpers import ROOT, Database, crawl_environment

pytestmark = pytest.mark.integration


def _store(database: Database, pages: list[PageItem]) -> None:
    async def scenario() -> None:
        backend = open_backend(database.url)
        await backend.open()
        await backend.write(Batch(pages=[page_row(page) for page in pages]))
        await backend.close()

    asyncio.run(scenario())


def _page(url: str, status: str, job: str, **fields: object) -> PageItem:
    return page_item(url, status, job_id=job, body=b"<html>", **fields)


def _run_export(database: Database, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "export", "-s", f"DATABASE_URL={database.url}", *options],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=crawl_environment(),
    )


def _export(database: Database, *options: str) -> str:
    result = _run_export(database, *options)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_export_filters_rows_and_writes_json_lines_and_csv(database: Database) -> None:
    _store(
        database,
        [
            _page("https://a.example/", "fetched", "j1", http_status=200, title="Home"),
            _page("https://a.example/down", "error", "j1", error="HTTP 503", http_status=503),
            _page("https://b.example/", "error", "j2", error="connection refused while fetching robots.txt"),
        ],
    )
    errors = [json.loads(line) for line in _export(database, "--status", "error").splitlines()]
    assert {row["url"]: row["error"] for row in errors} == {
        "https://a.example/down": "HTTP 503",
        "https://b.example/": "connection refused while fetching robots.txt",
    }
    assert "body" not in errors[0]
    rows = list(
        csv.reader(
            io.StringIO(
                _export(
                    database,
                    "--format",
                    "csv",
                    "--domain",
                    "a.example",
                    "--job",
                    "j1",
                    "--columns",
                    "url,status,http_status",
                )
            )
        )
    )
    assert rows[0] == ["url", "status", "http_status"]
    assert sorted(rows[1:]) == [["https://a.example/", "fetched", "200"], ["https://a.example/down", "error", "503"]]


def test_a_domain_named_by_its_host_alone_means_every_port_of_it(database: Database, tmp_path: Path) -> None:
    _store(
        database,
        [
            _page("http://127.0.0.17:8080/", "fetched", "j1"),
            _page("http://127.0.0.12:8080/", "fetched", "j1"),
            _page("http://127.0.0.12:8081/", "fetched", "j1"),
            _page("http://127.0.0.120/", "fetched", "j1"),
        ],
    )
    urls = [json.loads(line)["url"] for line in _export(database, "--domain", "127.0.0.17").splitlines()]
    assert urls == ["http://127.0.0.17:8080/"]  # its one port
    urls = [json.loads(line)["url"] for line in _export(database, "--domain", "127.0.0.12").splitlines()]
    assert sorted(urls) == ["http://127.0.0.12:8080/", "http://127.0.0.12:8081/"]  # not 127.0.0.120
    urls = [json.loads(line)["url"] for line in _export(database, "--domain", "127.0.0.12:8081").splitlines()]
    assert urls == ["http://127.0.0.12:8081/"]
    written = tmp_path / "pages.jsonl"
    for name, hint in [
        (
            "127.0.0.1",
            "known domains starting with 127.0.0.1: 127.0.0.12:8080, 127.0.0.12:8081, 127.0.0.120, 127.0.0.17:8080",
        ),
        ("127.0.0.17:9", "known domains starting with 127.0.0.17: 127.0.0.17:8080"),
        ("other.example", "no known domain starts with other.example"),
    ]:
        result = _run_export(database, "--domain", name, "-o", str(written))
        assert (result.returncode, result.stdout, result.stderr) == (
            1,
            "",
            f"scrapy export: no pages of {name}; {hint}\n",
        )
        assert not written.exists()  # nothing to write: no file

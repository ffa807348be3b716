"""A re-crawl against a real web server: nginx (Debian's) serves a 500-page site and answers
conditional requests itself. Run twice with a zero minimum interval and 10 pages edited in
between, the second run moves at most a tenth of the first run's bytes (nginx's own count,
``$bytes_sent``: status line, headers and body), every edit is in the rows, and no page loses
its stored text."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import Database, crawl
from tests.nginx import Nginx, Served

pytestmark = pytest.mark.integration

PAGES = 500
EDITED = [7 + 50 * k for k in range(10)]
RECRAWL = {"CRAWLER_RECRAWL_MIN_INTERVAL": "0", "DEPTH_LIMIT": "20", "CONCURRENT_REQUESTS_PER_DOMAIN": "16"}


def _page(n: int, edited: bool = False) -> str:
    links = "".join(
        f'<li><a href="/p/{(n * 5 + k) % PAGES}.html">page {(n * 5 + k) % PAGES}</a></li>' for k in range(1, 6)
    )
    # about 8 KB of text of its own (windows of one text would be twins of each other)
    rng = random.Random(n)
    words = " ".join(f"word{rng.randrange(997)}" for _ in range(900))
    note = f"<p>Edited page {n}: this text is new.</p>" if edited else ""
    return f"<!DOCTYPE html><html><head><title>Page {n}</title></head><body><h1>Page {n}</h1>{note}<p>{words}</p><ul>{links}</ul></body></html>"


@pytest.fixture(scope="module")
def nginx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nginx]:
    with Nginx(tmp_path_factory.mktemp("nginx"), address="127.0.0.90") as server:
        (server.root / "p").mkdir()
        (server.root / "robots.txt").write_text("User-agent: *\nDisallow:\n")
        (server.root / "index.html").write_text(
            '<html><head><title>Home</title></head><body><a href="/p/0.html">start</a></body></html>'
        )
        for n in range(PAGES):
            (server.root / "p" / f"{n}.html").write_text(_page(n))
        yield server


def _figures(served: list[Served]) -> dict[str, int]:
    pages = [s for s in served if s.path != "/robots.txt"]
    return {
        "requests": len(pages),
        "200": sum(s.status == 200 for s in pages),
        "304": sum(s.status == 304 for s in pages),
        "bytes": sum(s.bytes for s in served),
        "body bytes": sum(s.body_bytes for s in served),
    }


def test_a_recrawl_moves_only_what_changed(nginx: Nginx, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")  # the default backend of a cron job
    crawl("links", database, url=nginx.url, settings=RECRAWL)
    first_log = nginx.log()
    first = _figures(first_log)
    before = {url: row["text"] for url, row in database.pages().items()}

    for n in EDITED:
        path = nginx.root / "p" / f"{n}.html"
        path.write_text(_page(n, edited=True))
        later = path.stat().st_mtime + 100  # a new Last-Modified and ETag even within the same second
        os.utime(path, (later, later))
    crawl("links", database, url=nginx.url, job_id="recrawl", settings=RECRAWL)
    second = _figures(nginx.log()[len(first_log) :])
    with capsys.disabled():
        print(
            f"\nre-crawl of {PAGES + 1} pages served by nginx: first run {first}; second run {second}; "
            f"bytes ratio {second['bytes'] / first['bytes']:.3f}"
        )

    assert first["requests"] == first["200"] == PAGES + 1
    assert second["requests"] == PAGES + 1
    assert (second["200"], second["304"]) == (len(EDITED), PAGES + 1 - len(EDITED))
    assert second["bytes"] <= first["bytes"] / 10

    after = database.pages()
    assert after.keys() == before.keys()
    edited_urls = {f"{nginx.url}p/{n}.html" for n in EDITED}
    for url, row in after.items():
        assert row["text"], url  # no page loses its stored text
        if url in edited_urls:
            assert "this text is new" in row["text"] and row["status"] == "fetched", url
        else:
            assert row["text"] == before[url] and row["status"] == "unchanged", url

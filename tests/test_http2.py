"""CRAWLER_HTTP2: a crawl over HTTP/2 against nginx on loopback, paced as over HTTP/1.1,
asserted from nginx's own access log."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from scrapy.settings import Settings
from scrapy.utils.project import get_project_settings
from warcio.archiveiterator import ArchiveIterator

from bench.realweb import RealWeb, gaps
from crawler.addons.http2 import H2_HANDLER, Http2
from tests.helpers import Database, crawl

pytestmark = pytest.mark.integration

PAGES = 8
CRAWL_DELAY = 0.2


@pytest.fixture(scope="module")
def h2_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealWeb]:
    site = tmp_path_factory.mktemp("h2-site")
    for n in range(PAGES):
        links = "".join(f'<a href="page-{m}.html">{m}</a>' for m in range(PAGES) if m != n)
        (site / f"page-{n}.html").write_text(f"<html><head><title>Page {n}</title></head><body>{links}</body></html>")
    with RealWeb(1, crawl_delay=CRAWL_DELAY, https=True, site=site) as web:
        yield web


def test_pages_come_over_http2_spaced_by_the_limiter(h2_web: RealWeb, tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    h2_web.clear()
    warc = tmp_path / "warc"
    crawl(
        "links",
        database,
        url=h2_web.url(0, "/page-0.html"),
        settings={"CRAWLER_HTTP2": "True", "CRAWLER_WARC_DIR": str(warc)},
    )
    served = h2_web.log()
    assert served and {r.protocol for r in served} == {"HTTP/2.0"}
    pages = [r for r in served if r.path.startswith("/page-")]
    assert sorted(r.path for r in pages) == [f"/page-{n}.html" for n in range(PAGES)]
    # Each stream is a request the limiter paced, not a burst multiplexed at once. (Exact spacing
    # on the wire, when the process is held up between a slot and the socket write, is the
    # spacing-on-the-wire work's, the same over HTTP/1.1.)
    spacing = sorted(gaps(pages))
    assert spacing[len(spacing) // 2] >= CRAWL_DELAY - 0.010
    assert spacing[0] >= CRAWL_DELAY / 2
    rows = database.pages()
    assert {url.rsplit("/", 1)[1] for url, row in rows.items() if row["status"] == "fetched"} == {
        f"page-{n}.html" for n in range(PAGES)
    }
    (archive,) = warc.glob("*.warc.gz")  # HTTP/2 has no status line: the records say HTTP/2
    with archive.open("rb") as stream:
        lines = [r.http_headers.protocol for r in ArchiveIterator(stream) if r.rec_type in ("request", "response")]
    assert len(lines) == 2 * len(served) and set(lines) == {"GET", "HTTP/2"}


def test_the_handler_only_when_asked() -> None:
    settings = Settings({"DOWNLOAD_HANDLERS": {"ftp": None}})
    Http2().update_settings(settings)
    assert "https" not in settings.getdict("DOWNLOAD_HANDLERS")
    settings.set("CRAWLER_HTTP2", "True")
    Http2().update_settings(settings)
    assert settings.getdict("DOWNLOAD_HANDLERS") == {"ftp": None, "https": H2_HANDLER}
    assert get_project_settings().getdict("ADDONS")["crawler.addons.http2.Http2"] == 0

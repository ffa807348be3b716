"""CRAWLER_HTTP2: a crawl over HTTP/2 against nginx on loopback, paced as over HTTP/1.1 (no
request early, robots.txt and the first page after it included, the spacing margin applied),
asserted from nginx's own access log."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from scrapy.settings import Settings
from scrapy.utils.project import get_project_settings
from warcio.archiveiterator import ArchiveIterator

from bench.realweb import RealWeb, gaps, loopback_addresses
from crawler.addons.http2 import H2_HANDLER, Http2
from tests.helpers import Database, crawl, linked_pages

pytestmark = pytest.mark.integration

PAGES = 8
DELAYS = (1.0, 0.2)


@pytest.fixture(scope="module")
def h2_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealWeb]:
    site = linked_pages(tmp_path_factory.mktemp("h2-site"), PAGES)
    delays = dict(zip(loopback_addresses(len(DELAYS)), DELAYS))
    with RealWeb(len(DELAYS), delays=delays, https=True, site=site) as web:
        yield web


def test_pages_come_over_http2_spaced_by_the_limiter(h2_web: RealWeb, tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    h2_web.clear()
    warc = tmp_path / "warc"
    seeds = ",".join(h2_web.url(n, "/page-0.html") for n in range(len(DELAYS)))
    crawl("links", database, url=seeds, settings={"CRAWLER_HTTP2": "True", "CRAWLER_WARC_DIR": str(warc)})
    served = h2_web.requests_by_host()
    assert len(served) == len(DELAYS)
    for address, delay in zip(h2_web.addresses, DELAYS):
        requests = served[address]
        assert {r.protocol for r in requests} == {"HTTP/2.0"}
        assert [r.path for r in requests][0] == "/robots.txt"
        assert sorted(r.path for r in requests[1:]) == [f"/page-{n}.html" for n in range(PAGES)]
        # Every stream a request the limiter paced: none early, robots.txt and the first page after
        # it included (the log's starts are read to the millisecond, twice: 2 ms of rounding).
        assert min(gaps(requests)) >= delay - 0.002, (address, delay, gaps(requests))
    rows = database.pages()
    assert sum(1 for row in rows.values() if row["status"] == "fetched") == PAGES * len(DELAYS)
    (archive,) = warc.glob("*.warc.gz")  # HTTP/2 has no status line: the records say HTTP/2
    with archive.open("rb") as stream:
        lines = [r.http_headers.protocol for r in ArchiveIterator(stream) if r.rec_type in ("request", "response")]
    assert len(lines) == 2 * sum(map(len, served.values())) and set(lines) == {"GET", "HTTP/2"}


def test_the_handler_only_when_asked() -> None:
    settings = Settings({"DOWNLOAD_HANDLERS": {"ftp": None}})
    Http2().update_settings(settings)
    assert "https" not in settings.getdict("DOWNLOAD_HANDLERS")
    settings.set("CRAWLER_HTTP2", "True")
    Http2().update_settings(settings)
    assert settings.getdict("DOWNLOAD_HANDLERS") == {"ftp": None, "https": H2_HANDLER}
    assert get_project_settings().getdict("ADDONS")["crawler.addons.http2.Http2"] == 0

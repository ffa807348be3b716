"""Content-type accept and reject lists."""

from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.exceptions import StopDownload
from scrapy.http import Headers
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from crawler.http.content import content_type_allowed, extension_set, ignored_extension
from crawler.middlewares.filters import ContentTypeFilterMiddleware


@pytest.mark.parametrize(
    ("media_type", "accept", "reject", "allowed"),
    [
        ("text/html", ["text/*"], [], True),
        ("text/csv", ["text/*"], ["text/csv"], False),
        ("image/png", ["text/*", "application/xhtml+xml"], [], False),
        ("application/atom+xml", ["application/*+xml"], [], True),
        ("application/pdf", ["*/*"], ["application/pdf"], False),
        (None, ["text/html"], [], True),
    ],
)
def test_content_type_lists(media_type, accept, reject, allowed) -> None:
    assert content_type_allowed(media_type, accept, reject) is allowed


def _headers_received(headers: dict[str, str], **meta: object) -> bool:
    """Whether the filter stops the download when these headers arrive."""
    crawler = get_crawler(
        settings_dict={"CRAWLER_ACCEPT_CONTENT_TYPES": ["text/*"], "CRAWLER_REJECT_CONTENT_TYPES": []}
    )
    middleware = build_from_crawler(ContentTypeFilterMiddleware, crawler)
    try:
        middleware.headers_received(Headers(headers), 1000, Request("http://127.0.0.1/x", meta=meta), spider=None)
    except StopDownload as stop:
        assert not stop.fail  # the response, without body, still gets its filtered row
        assert crawler.stats.get_value("filters/content_type_stopped") == 1
        return True
    return False


def test_a_refused_type_is_stopped_at_the_headers() -> None:
    assert _headers_received({"Content-Type": "application/pdf"})
    assert _headers_received({"Content-Type": "IMAGE/PNG; q=1"})


def test_accepted_unknown_redirects_and_exempt_requests_download_on() -> None:
    assert not _headers_received({"Content-Type": "text/html; charset=utf-8"})
    assert not _headers_received({})
    assert not _headers_received({"Content-Type": "application/pdf", "Location": "/elsewhere"})
    assert not _headers_received({"Content-Type": "application/x-gzip"}, dont_filter_content_type=True)


@pytest.mark.parametrize(
    ("url", "extension"),
    [
        ("http://s.example/a/report.PDF", ".pdf"),
        ("http://s.example/archive.tar.gz?x=1", ".gz"),
        ("http://s.example/movie.mp4", ".mp4"),
        ("http://s.example/page.html", None),
        ("http://s.example/dir.pdf/", None),
        ("http://s.example/?file=x.pdf", None),
        ("http://s.example/", None),
    ],
)
def test_ignored_extension(url: str, extension: str | None) -> None:
    assert ignored_extension(url, extension_set(["pdf", ".GZ", "mp4", ""])) == extension

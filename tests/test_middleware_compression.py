"""Decompression without charset detection on the compressed bytes, gzip in one call to zlib-ng."""

from __future__ import annotations

import gzip
import logging

import pytest
from scrapy import Request
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response
from scrapy.utils._compression import _DecompressionMaxSizeExceeded
from scrapy.utils.gz import gunzip as scrapy_gunzip
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from crawler.middlewares.compression import CompressedBodyMiddleware, gunzip

# No charset in Content-Type nor in the document: the case where Scrapy sniffs the body.
PAGE = ("<html><head><title>Tschüß</title></head><body>" + "<p>Grüße aus Köln</p>" * 50 + "</body></html>").encode()


def _compressed(url: str = "http://127.0.0.1/page.html") -> tuple[Request, HtmlResponse]:
    request = Request(url)
    headers = {"Content-Type": "text/html", "Content-Encoding": "gzip"}
    return request, HtmlResponse(url, body=gzip.compress(PAGE), headers=headers, request=request)


def _detection_records(
    caplog: pytest.LogCaptureFixture, middleware_class: type[HttpCompressionMiddleware]
) -> tuple[int, Response]:
    middleware = build_from_crawler(middleware_class, get_crawler())
    request, response = _compressed()
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="charset_normalizer"):
        result = middleware.process_response(request, response)
    return sum(1 for r in caplog.records if r.name.startswith("charset_normalizer")), result


def test_stock_middleware_sniffs_the_compressed_bytes(caplog) -> None:
    # What the replacement is for; if Scrapy stops doing this, the replacement can go.
    records, _ = _detection_records(caplog, HttpCompressionMiddleware)
    assert records > 0


def test_no_charset_detection_of_compressed_bytes(caplog) -> None:
    records, result = _detection_records(caplog, CompressedBodyMiddleware)
    assert records == 0
    assert isinstance(result, HtmlResponse)
    assert result.body == PAGE
    assert result.encoding == "utf-8"
    assert "Grüße aus Köln" in result.text
    assert b"Content-Encoding" not in result.headers


def test_uncompressed_and_head_responses_pass_unchanged() -> None:
    middleware = build_from_crawler(CompressedBodyMiddleware, get_crawler())
    request = Request("http://127.0.0.1/")
    plain = HtmlResponse(request.url, body=PAGE, headers={"Content-Type": "text/html"}, request=request)
    assert middleware.process_response(request, plain) is plain
    head, response = Request(request.url, method="HEAD"), _compressed()[1]
    assert middleware.process_response(head, response) is response


def test_enabled_in_place_of_scrapys() -> None:
    from scrapy.utils.project import get_project_settings

    middlewares = get_project_settings().getwithbase("DOWNLOADER_MIDDLEWARES")
    assert middlewares["scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware"] is None
    assert middlewares["crawler.middlewares.compression.CompressedBodyMiddleware"] == 590


def _damaged_crc(data: bytes) -> bytes:
    return data[:-8] + bytes([data[-8] ^ 0xFF]) + data[-7:]


BODIES = {
    "sound": gzip.compress(PAGE),
    "two members": gzip.compress(PAGE) + gzip.compress(b"<p>more</p>"),
    "cut short": gzip.compress(PAGE)[:-200],
    "damaged checksum": _damaged_crc(gzip.compress(PAGE)),
    "trailing garbage": gzip.compress(PAGE) + b"\x00garbage",
    "empty": gzip.compress(b""),
}


@pytest.mark.parametrize("name", BODIES)
def test_gzip_in_one_call_gives_what_scrapys_gunzip_gives(name: str) -> None:
    data = BODIES[name]
    assert gunzip(data) == scrapy_gunzip(data)
    assert gunzip(data, max_size=len(PAGE) + 100) == scrapy_gunzip(data, max_size=len(PAGE) + 100)


def test_gzip_over_the_size_limit_is_refused_as_scrapy_refuses_it() -> None:
    for max_size in (1, len(PAGE) - 1):
        with pytest.raises(_DecompressionMaxSizeExceeded) as ours:
            gunzip(BODIES["sound"], max_size=max_size)
        assert ours.value.decompressed_size > max_size
        with pytest.raises(_DecompressionMaxSizeExceeded):
            scrapy_gunzip(BODIES["sound"], max_size=max_size)
    assert gunzip(BODIES["sound"], max_size=len(PAGE)) == PAGE


def test_not_gzip_at_all_fails_as_scrapys_does() -> None:
    with pytest.raises(OSError):
        scrapy_gunzip(b"plain text, not gzip")
    with pytest.raises(OSError):
        gunzip(b"plain text, not gzip")


def test_a_gzip_body_over_download_maxsize_is_ignored() -> None:
    middleware = build_from_crawler(CompressedBodyMiddleware, get_crawler(settings_dict={"DOWNLOAD_MAXSIZE": 1000}))
    request, response = _compressed()
    with pytest.raises(IgnoreRequest, match="exceeded DOWNLOAD_MAXSIZE"):
        middleware.process_response(request, response)

"""A meta refresh is found in the first 4096 characters of a page, as Scrapy finds it, without
decoding the rest of the body."""

from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware
from scrapy.http import HtmlResponse, Response
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from crawler.middlewares.redirects import CheckedMetaRefreshMiddleware

REFRESH = '<meta http-equiv="refresh" content="0; url=/next">'
ESCAPED = '<meta http-equiv="&#114;efresh" content="0; url=/next">'  # an entity where the word is


def _page(
    head: str, filler: int = 0, encoding: str = "utf-8", declared: bool = True, letter: str = "é"
) -> tuple[Request, HtmlResponse]:
    request = Request("http://s.example/dir/page")
    text = f"<html><head>{'<!--' + letter * filler + '-->' if filler else ''}{head}</head><body>{f'<p>{letter}</p>' * 1000}</body></html>"
    content_type = f"text/html; charset={encoding}" if declared else "text/html"
    return request, HtmlResponse(
        request.url, body=text.encode(encoding), headers={"Content-Type": content_type}, request=request
    )


def _outcome(middleware_class: type[MetaRefreshMiddleware], request: Request, response: HtmlResponse) -> str | None:
    result = build_from_crawler(middleware_class, get_crawler()).process_response(request, response)
    return result.url if isinstance(result, Request) else None


@pytest.mark.parametrize(
    ("head", "filler", "encoding", "declared", "found"),
    [
        (REFRESH, 0, "utf-8", True, True),
        (ESCAPED, 0, "utf-8", True, False),  # Scrapy does not read it either
        (
            '<base href="/elsewhere/">' + REFRESH.replace("/next", "next"),
            0,
            "utf-8",
            True,
            True,
        ),  # relative to the base
        (REFRESH, 4000, "utf-8", True, True),  # inside the first 4096 characters, past the first 4096 bytes
        (REFRESH, 4100, "utf-8", True, False),  # past them: not read
        (REFRESH, 0, "utf-16", False, True),  # its byte order mark tells the encoding
        (REFRESH, 3000, "cp1252", True, True),
        (REFRESH, 4000, "utf-32", False, True),  # its byte order mark and 4 bytes a character
        ("<script>" + REFRESH + "</script>", 0, "utf-8", True, True),  # METAREFRESH_IGNORE_TAGS is empty by default
        ("<title>no refresh</title>", 0, "utf-8", True, False),
    ],
)
def test_the_refresh_followed_is_the_one_scrapy_follows(
    head: str, filler: int, encoding: str, declared: bool, found: bool
) -> None:
    request, response = _page(head, filler, encoding, declared)
    expected = _outcome(MetaRefreshMiddleware, request, response)
    assert (expected is not None) == found
    request, response = _page(head, filler, encoding, declared)
    assert _outcome(CheckedMetaRefreshMiddleware, request, response) == expected
    if not found:
        assert response._cached_ubody is None  # the body was not decoded to say so


def test_an_encoding_of_more_than_4_bytes_a_character_is_left_to_scrapy() -> None:
    # ISO-2022-JP switches between ASCII and kanji with escape sequences: 16 KB may hold fewer
    # than 4096 characters, and a refresh Scrapy reads there must be followed.
    request, response = _page(REFRESH, 1850, "iso-2022-jp", letter="a漢")  # 3700 characters, 16,650 bytes
    assert len(response.body[: 4 * 4096 + 4].decode("iso-2022-jp", "replace")) < 4096
    assert response.text.index("refresh") < 4096
    assert _outcome(CheckedMetaRefreshMiddleware, request, response) == "http://s.example/next"


def test_ignored_tags_are_ignored_as_scrapy_ignores_them() -> None:
    settings = {"METAREFRESH_IGNORE_TAGS": ["script"]}
    for middleware_class in (MetaRefreshMiddleware, CheckedMetaRefreshMiddleware):
        request, response = _page("<script>" + REFRESH + "</script>")
        middleware = build_from_crawler(middleware_class, get_crawler(settings_dict=settings))
        assert middleware.process_response(request, response) is response
    request, response = _page("<noscript>" + REFRESH + "</noscript>")
    middleware = build_from_crawler(CheckedMetaRefreshMiddleware, get_crawler(settings_dict=settings))
    assert middleware.process_response(request, response).url == "http://s.example/next"


def test_a_response_that_is_not_html_passes() -> None:
    request = Request("http://s.example/file")
    response = Response(request.url, body=REFRESH.encode(), request=request)
    assert (
        build_from_crawler(CheckedMetaRefreshMiddleware, get_crawler()).process_response(request, response) is response
    )

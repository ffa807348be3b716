"""Rows the safety checks write: refusals, redirect chains, text cut at its cap, pages in any encoding."""

from __future__ import annotations

import asyncio

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.settings import Settings
from twisted.python.failure import Failure

from crawler.exceptions import BlockedByPolicy, RedirectFailed
from crawler.identity import normalize_url
from crawler.outcomes import OutcomeRecorder
from tests.helpers import project_settings


def _recorder(**settings: object) -> OutcomeRecorder:
    return OutcomeRecorder(Settings(project_settings(**settings)), normalize_url, "job", "crawler")


def _failed(recorder: OutcomeRecorder, error: Exception, request: Request):
    failure = Failure(error)
    return recorder.failed(failure, request)


def test_text_is_cut_at_its_cap() -> None:
    request = Request("http://s.example/")
    body = b"<html><body><p>" + b"word " * 1000 + b"</p></body></html>"
    response = HtmlResponse(request.url, body=body, headers={"Content-Type": "text/html"}, request=request)
    item, _ = asyncio.run(_recorder(CRAWLER_MAX_TEXT_CHARS=100).fetched(response))
    assert item.status == "fetched" and item.text == ("word " * 20)[:100]
    item, _ = asyncio.run(_recorder(CRAWLER_MAX_TEXT_CHARS=0).fetched(response))
    assert len(item.text) == len("word " * 1000) - 1


PAGE = "<html><head><title>Café</title></head><body><p>Naïve <a href='/ç'>façade</a> ☃</p></body></html>"


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (PAGE.encode("utf-8"), "text/html; charset=utf-8"),
        (PAGE.encode("utf-8"), "text/html"),  # no charset anywhere: detected
        (b"\xef\xbb\xbf" + PAGE.encode("utf-8"), "text/html"),  # UTF-8 with its byte order mark
        (b"\xef\xbb\xbf" + PAGE.encode("utf-8"), "text/html; charset=iso-8859-1"),  # the mark wins
        (PAGE.replace("☃", "").encode("cp1252"), "text/html; charset=windows-1252"),
        (PAGE.encode("utf-16"), "text/html"),  # UTF-16 with its byte order mark
    ],
)
def test_a_page_reads_the_same_in_any_encoding_it_declares(body: bytes, content_type: str) -> None:
    request = Request("http://s.example/")
    response = HtmlResponse(request.url, body=body, headers={"Content-Type": content_type}, request=request)
    item, page = asyncio.run(_recorder().fetched(response))
    assert item.status == "fetched" and item.title == "Café"
    assert item.text.removesuffix(" ☃") == "Naïve façade"
    assert page.links == ["http://s.example/%C3%A7"]


def test_bytes_that_are_not_utf8_in_a_utf8_page_read_as_replacement_characters() -> None:
    request = Request("http://s.example/")
    body = b"<html><body><p>caf\xe9 cr\xffme</p></body></html>"
    response = HtmlResponse(
        request.url, body=body, headers={"Content-Type": "text/html; charset=utf-8"}, request=request
    )
    item, _ = asyncio.run(_recorder().fetched(response))
    assert item.status == "fetched" and item.text == "caf\ufffd cr\ufffdme"


def test_a_refusal_is_a_blocked_by_policy_row_of_the_first_url() -> None:
    request = Request("http://127.0.0.1/secret", meta={"redirect_urls": ["http://public.example/"]})
    item = _failed(_recorder(), BlockedByPolicy("address refused: 127.0.0.1 is a loopback address"), request)
    assert (item.url, item.status, item.error) == (
        "http://public.example/",
        "blocked_by_policy",
        "address refused: 127.0.0.1 is a loopback address",
    )
    assert not item.site_failure


def test_a_redirect_chain_that_ends_nowhere_is_an_error_row_saying_how() -> None:
    request = Request("http://s.example/b", meta={"redirect_urls": ["http://s.example/a"]})
    item = _failed(
        _recorder(),
        RedirectFailed("redirect loop: http://s.example/a -> http://s.example/b -> http://s.example/a"),
        request,
    )
    assert (item.url, item.status) == ("http://s.example/a", "error")
    assert item.error == "redirect loop: http://s.example/a -> http://s.example/b -> http://s.example/a"
    assert not item.site_failure

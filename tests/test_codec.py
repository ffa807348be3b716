"""Requests to and from the shared frontier's text form: plain JSON, compact, never pickle."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from scrapy import Request

from crawler.frontier.codec import RequestCodec, UnserializableRequest
from crawler.settings import CRAWLER_REDIS_LOCAL_META_KEYS, CRAWLER_REDIS_META_KEYS
from tests.helpers import PageSpider


@pytest.fixture
def codec() -> RequestCodec:
    return RequestCodec(PageSpider(), CRAWLER_REDIS_META_KEYS, CRAWLER_REDIS_LOCAL_META_KEYS)


def _round_trip(codec: RequestCodec, request: Request, key: str | None = None) -> tuple[str, Request, str]:
    encoded = codec.encode(request, key or request.url)
    decoded_key, decoded = codec.decode(encoded)
    return decoded_key, decoded, encoded


def test_a_link_request_round_trips(codec: RequestCodec) -> None:
    spider = codec.spider
    lastmod = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    request = Request(
        "https://example.com/a/b?x=1",
        callback=spider.parse_page,
        errback=spider.page_failed,
        priority=298,
        meta={"depth": 2, "discovered_via": "link", "referrer": "https://example.com/a", "sitemap_lastmod": lastmod},
    )
    key, decoded, _ = _round_trip(codec, request)
    assert key == request.url
    assert decoded.url == request.url
    assert decoded.callback == spider.parse_page and decoded.errback == spider.page_failed
    assert decoded.priority == 298
    assert decoded.meta == {
        "depth": 2,
        "discovered_via": "link",
        "referrer": "https://example.com/a",
        "sitemap_lastmod": lastmod,
    }
    assert not decoded.dont_filter


def test_the_usual_callbacks_are_left_out_and_others_kept(codec: RequestCodec) -> None:
    spider = codec.spider
    usual = codec.encode(
        Request("http://a.test/", callback=spider.parse_page, errback=spider.page_failed), "http://a.test/"
    )
    assert '"c"' not in usual and '"e"' not in usual
    swapped = Request("http://a.test/", callback=spider.page_failed, errback=None)
    decoded = codec.decode(codec.encode(swapped, swapped.url))[1]
    assert decoded.callback == spider.page_failed and decoded.errback is None


def test_transient_meta_is_dropped_and_falsy_flags_are_left_out(codec: RequestCodec) -> None:
    request = Request(
        "http://a.test/", meta={"download_slot": "a.test", "download_latency": 0.2, "depth": 0, "dont_retry": False}
    )
    _, decoded, encoded = _round_trip(codec, request)
    assert decoded.meta == {"depth": 0}
    assert "download" not in encoded


def test_a_redirected_request_keeps_the_key_of_its_first_url(codec: RequestCodec) -> None:
    request = Request("http://a.test/to", meta={"redirect_urls": ["http://a.test/from"], "redirect_times": 1})
    key, decoded, _ = _round_trip(codec, request, key="http://a.test/from")
    assert key == "http://a.test/from"
    assert decoded.url == "http://a.test/to"
    assert decoded.meta["redirect_urls"] == ["http://a.test/from"]


def test_method_body_headers_and_dont_filter_survive(codec: RequestCodec) -> None:
    request = Request(
        "http://a.test/form", method="POST", body=b"a=1&b=\xe9", headers={"X-Thing": "yes"}, dont_filter=True
    )
    _, decoded, _ = _round_trip(codec, request)
    assert (decoded.method, decoded.body, decoded.headers.get("X-Thing"), decoded.dont_filter) == (
        "POST",
        b"a=1&b=\xe9",
        b"yes",
        True,
    )


def test_referrer_on_the_same_site_costs_only_its_path(codec: RequestCodec) -> None:
    url = "https://www.example.com/articles/2026/some-long-article-name"
    same = codec.encode(Request(url, meta={"referrer": "https://www.example.com/articles/"}), url)
    other = codec.encode(Request(url, meta={"referrer": "https://other.example/articles/"}), url)
    assert '"r":"/articles/"' in same
    assert "https://other.example/articles/" in other
    assert codec.decode(same)[1].meta["referrer"] == "https://www.example.com/articles/"


def test_a_typical_link_request_costs_its_url_plus_a_few_dozen_bytes(codec: RequestCodec) -> None:
    url = "https://www.example.com/section/7/page/123"
    request = Request(
        url,
        callback=codec.spider.parse_page,
        errback=codec.spider.page_failed,
        priority=297,
        meta={"depth": 3, "discovered_via": "link", "referrer": "https://www.example.com/section/7"},
    )
    assert len(codec.encode(request, url).encode()) <= len(url) + 80


def test_no_pickle_and_nothing_that_is_not_json(codec: RequestCodec) -> None:
    with pytest.raises(UnserializableRequest, match="not plain JSON"):
        codec.encode(Request("http://a.test/", meta={"depth": object()}), "http://a.test/")
    with pytest.raises(UnserializableRequest, match="not a method of the spider"):
        codec.encode(Request("http://a.test/", callback=lambda r: None), "http://a.test/")
    with pytest.raises(UnserializableRequest, match="objects of this process"):
        codec.encode(Request("http://a.test/", meta={"discovery": "x"}), "http://a.test/")


def test_decoding_names_only_spider_methods(codec: RequestCodec) -> None:
    with pytest.raises(UnserializableRequest):
        codec.decode('http://a.test/\t{"c":"__class__"}')
    with pytest.raises(UnserializableRequest):
        codec.decode('http://a.test/\t{"c":"os.system"}')
    with pytest.raises(ValueError):
        codec.decode("http://a.test/\tnot json")

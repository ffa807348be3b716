"""The memory queue that keeps plain requests as bytes: the same requests come out, in order,
and queued requests cost the garbage collector nothing."""

from __future__ import annotations

import gc
from datetime import datetime

import pytest
from scrapy import Request
from scrapy.http import FormRequest

from crawler.frontier.compact import CompactFifoMemoryQueue, is_plain
from tests.helpers import PageSpider


class LabelledRequest(Request):
    """A request whose constructor wants more than Request's attributes."""

    def __init__(self, url: str, label: str, **kwargs) -> None:
        super().__init__(url, **kwargs)
        self.label = label


@pytest.fixture
def spider() -> PageSpider:
    return PageSpider(name="pages")


def test_a_plain_request_comes_back_whole(spider: PageSpider) -> None:
    queue = CompactFifoMemoryQueue(spider)
    request = Request(
        "http://a.example/page?q=1",
        callback=spider.parse_page,
        errback=spider.page_failed,
        method="POST",
        body=b"x=1",
        headers={"Referer": "http://a.example/"},
        cookies={"session": "1"},
        meta={
            "depth": 2,
            "redirect_urls": ["http://a.example/old"],
            "lastmod": datetime(2026, 1, 2),
            "nested": {"a": (1, 2)},
        },
        cb_kwargs={"kind": "page"},
        priority=7,
        dont_filter=True,
        flags=["seed"],
    )
    queue.push(request)
    assert len(queue) == 1
    popped = queue.pop()
    assert popped is not None and popped is not request
    assert popped.to_dict(spider=spider) == request.to_dict(spider=spider)
    assert popped.callback == spider.parse_page and popped.errback == spider.page_failed
    assert len(queue) == 0 and queue.pop() is None


def test_a_request_subclass_keeps_its_class(spider: PageSpider) -> None:
    queue = CompactFifoMemoryQueue(spider)
    queue.push(FormRequest("http://a.example/form", formdata={"a": "1"}))
    popped = queue.pop()
    assert type(popped) is FormRequest and popped.body == b"a=1"


@pytest.mark.parametrize(
    "request_factory",
    [
        lambda spider: Request("http://a.example/", meta={"state": object()}),
        lambda spider: Request("http://a.example/", cb_kwargs={"sink": []}, meta={"holder": {1: "int key"}}),
        lambda spider: Request("http://a.example/", callback=lambda response: None),
        lambda spider: Request("http://a.example/", callback=PageSpider(name="other").parse_page),
        lambda spider: LabelledRequest("http://a.example/", label="seed"),
    ],
    ids=[
        "object in meta",
        "non-string key",
        "lambda callback",
        "another spider's method",
        "a subclass of the project's",
    ],
)
def test_any_other_request_stays_the_same_object(spider: PageSpider, request_factory) -> None:
    queue = CompactFifoMemoryQueue(spider)
    request = request_factory(spider)
    queue.push(request)
    assert queue.peek() is request and queue.pop() is request


def test_a_method_the_spider_has_under_another_name_comes_back_as_it(spider: PageSpider) -> None:
    spider.handle = spider.parse_page  # an attribute named otherwise than the function
    queue = CompactFifoMemoryQueue(spider)
    queue.push(Request("http://a.example/", callback=spider.handle))
    assert queue.pop().callback == spider.parse_page


def test_first_in_first_out_across_kept_and_compacted_requests(spider: PageSpider) -> None:
    queue = CompactFifoMemoryQueue(spider)
    kept = Request("http://a.example/2", meta={"state": object()})
    queue.push(Request("http://a.example/1"))
    queue.push(kept)
    queue.push(Request("http://a.example/3"))
    assert [queue.pop().url for _ in range(3)] == ["http://a.example/1", "http://a.example/2", "http://a.example/3"]


def test_queued_requests_are_not_tracked_by_the_garbage_collector(spider: PageSpider) -> None:
    queue = CompactFifoMemoryQueue(spider)
    gc.collect()
    before = len(gc.get_objects())
    for n in range(10_000):
        queue.push(
            Request(
                f"http://site{n % 100}.example/page/{n}",
                meta={"depth": 3, "referrer": "http://x.example/"},
                priority=-3,
            )
        )
    gc.collect()
    assert len(gc.get_objects()) - before < 1_000  # as Request objects: over 20,000
    assert len(queue) == 10_000 and queue.pop().url == "http://site0.example/page/0"


def test_plain_data() -> None:
    assert is_plain({"a": [1, 2.5, "x", b"y", None, True, (1, {"b": datetime(2026, 1, 1)})]})
    assert not is_plain({"a": object()})
    assert not is_plain({1: "int key"})
    assert not is_plain([[[[["too deep"]]]]])

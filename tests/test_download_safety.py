"""What a crawl process may download and run: only http(s) handlers, the remote-control
endpoint off, response headers bounded, binary served as text recognised."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy import Spider
from scrapy.exceptions import NotConfigured
from scrapy.extensions.remote_control import RemoteControl
from scrapy.utils.test import get_crawler
from twisted.internet.error import DNSLookupError
from twisted.internet.testing import StringTransport
from twisted.web._newclient import HTTPClientParser
from twisted.web._newclient import Request as TxRequest
from twisted.web.http_headers import Headers

from crawler.guard import AddressPolicy, parse_networks
from crawler.guard.resolver import GuardedResolver
from crawler.http.header_limits import BoundedHTTPClientParser, HeaderLimits, HeadersTooLarge
from crawler.http.sniff import BINARY_SHARE, SNIFF_BYTES, binary_kind
from tests.helpers import project_settings


def test_only_http_and_https_can_be_downloaded() -> None:
    crawler = get_crawler(Spider, project_settings())
    handlers = {scheme: path for scheme, path in crawler.settings.getwithbase("DOWNLOAD_HANDLERS").items() if path}
    assert handlers == {
        "http": "crawler.download.handler.GuardedHTTPDownloadHandler",
        "https": "crawler.download.handler.GuardedHTTPDownloadHandler",
    }


def test_the_remote_control_extension_is_off() -> None:
    crawler = get_crawler(Spider, project_settings())
    with pytest.raises(NotConfigured):
        RemoteControl(crawler)


def _parser(limits: HeaderLimits) -> HTTPClientParser:
    # As the protocol makes it: Twisted's parser, its class replaced (a contract with Twisted's
    # and Scrapy's private parser classes, which fails loudly if they change).
    parser = HTTPClientParser(TxRequest(b"GET", b"/", Headers(), None), lambda rest: None)
    parser.__class__ = BoundedHTTPClientParser
    parser.limits, parser.header_bytes, parser.header_lines = limits, 0, 0
    parser.makeConnection(StringTransport())
    return parser


def test_headers_within_the_limits_are_read() -> None:
    parser = _parser(HeaderLimits(max_bytes=1000, max_lines=10))
    parser.dataReceived(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 0\r\nX-A: b\r\n\r\n")
    assert parser.response.code == 200 and parser.response.headers.getRawHeaders(b"x-a") == [b"b"]


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        (HeaderLimits(max_bytes=10_000, max_lines=0), "response headers larger than 10000 bytes"),
        (HeaderLimits(max_bytes=0, max_lines=50), "more than 50 response header lines"),
    ],
)
def test_endless_headers_stop_at_the_limits(limits: HeaderLimits, message: str) -> None:
    parser = _parser(limits)
    parser.dataReceived(b"HTTP/1.1 200 OK\r\n")
    with pytest.raises(HeadersTooLarge, match=message):
        for n in range(100_000):
            parser.dataReceived(b"X-Filler-%d: %s\r\n" % (n, b"a" * 100))


def test_interim_responses_count_against_the_same_limits() -> None:
    parser = _parser(HeaderLimits(max_bytes=0, max_lines=20))
    with pytest.raises(HeadersTooLarge):
        for _ in range(100):
            parser.dataReceived(b"HTTP/1.1 100 Continue\r\nX-A: b\r\n\r\n")


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "a PNG image"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "a JPEG image"),
        (b"%PDF-1.7\n%\xe2\xe3", "a PDF document"),
        (b"PK\x03\x04\x14\x00", "a ZIP archive"),
        (b"\x1f\x8b\x08\x00\x00\x00", "gzip data"),
        (b"\x7fELF\x02\x01\x01", "an ELF executable"),
        (b"\x00\x00\x00\x18ftypmp42", "MP4 media"),
        (bytes(range(32)) * 10, "binary data"),
    ],
)
def test_binary_content_is_recognised(body: bytes, kind: str) -> None:
    assert binary_kind(body) == kind


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"<!DOCTYPE html><html><body>caf\xc3\xa9</body></html>",
        b"<html><body>broken \x00\xff markup with a stray NUL</body></html>" * 3,
        "<html>\u00e9t\u00e9</html>".encode("utf-16"),  # UTF-16 with its BOM: NULs everywhere
        b"MZ is a text that starts like an executable",
        b"plain text\twith\ttabs\r\nand lines\x0c",
    ],
)
def test_text_is_not_taken_for_binary(body: bytes) -> None:
    assert binary_kind(body) is None


def test_the_resolver_refuses_what_a_name_resolves_to_and_remembers_why() -> None:
    policy = AddressPolicy(parse_networks(["10.0.0.0/8"]))
    policy.allow_seed("intranet.example")
    resolver = GuardedResolver(reactor=None, cache_size=0, timeout=1.0, policy=policy)  # type: ignore[arg-type]
    assert resolver._check("93.184.215.14", "www.example.com") == "93.184.215.14"
    assert resolver._check("10.1.2.3", "wiki.example.com") == "10.1.2.3"  # an allowed network
    assert resolver._check("192.168.1.1", "intranet.example") == "192.168.1.1"  # a seed
    with pytest.raises(
        DNSLookupError, match="rebind.example resolves to 169.254.169.254; 169.254.169.254 is a cloud metadata address"
    ):
        resolver._check("169.254.169.254", "rebind.example")
    assert resolver.refusals["rebind.example"].category == "metadata"


WHATWG_BINARY_DATA_BYTES = {*range(0x00, 0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)}


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=2000))
def test_a_body_is_binary_past_a_tenth_of_binary_data_bytes_in_its_first_bytes(data: bytes) -> None:
    head = (b"<" + data)[:SNIFF_BYTES]  # "<": no signature, no BOM
    binary = sum(1 for byte in head if byte in WHATWG_BINARY_DATA_BYTES)
    assert binary_kind(b"<" + data) == ("binary data" if binary > BINARY_SHARE * len(head) else None)

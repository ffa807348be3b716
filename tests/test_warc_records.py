"""The WARC records of a fetch, from Scrapy's request and response to the bytes of each record:
read back with warcio, digests checked."""

from __future__ import annotations

import gzip
import io
import zlib
from datetime import UTC, datetime
from ipaddress import ip_address

import pytest
from scrapy import Request
from scrapy.http import Response
from warcio.archiveiterator import ArchiveIterator
from warcio.recordloader import ArcWarcRecord
from warcio.utils import Digester

from crawler.warc import Archived, archived_in
from crawler.warc.exchange import Exchange, captured, status_line_protocol
from crawler.warc.names import index_name, warc_name
from crawler.warc.records import (
    IDENTICAL_PAYLOAD,
    NOT_MODIFIED,
    RecordMaker,
    payload_digest,
    record_id,
    revisit_profile,
    serialized,
)

WHEN = datetime(2026, 5, 4, 3, 2, 1, 123456, tzinfo=UTC)
PAGE = gzip.compress(b"<html><body>caf\xc3\xa9</body></html>")


def _exchange(**changes: object) -> Exchange:
    fields: dict[str, object] = {
        "url": "http://example.com/a;p?q=1",
        "method": "GET",
        "target": "/a;p?q=1",
        "request_headers": [("User-Agent", "crawler"), ("Accept-Encoding", "gzip"), ("Host", "example.com")],
        "request_body": b"",
        "protocol": "HTTP/1.1",
        "status": 200,
        "response_headers": [("Content-Type", "text/html"), ("Content-Encoding", "gzip")],
        "payload": PAGE,
        "date": WHEN,
        "ip_address": "192.0.2.7",
    }
    return Exchange(**(fields | changes))  # type: ignore[arg-type]


def _read(*records: ArcWarcRecord) -> list[tuple[ArcWarcRecord, bytes]]:
    """The records as a reader sees them, each with its raw payload, digests checked."""
    data = b"".join(serialized(record) for record in records)
    found = []
    for record in ArchiveIterator(io.BytesIO(data), check_digests=True):
        payload = record.raw_stream.read()
        assert record.digest_checker.passed is not False, record.digest_checker.problems
        found.append((record, payload))
    return found


def _warc(record: ArcWarcRecord, name: str) -> str | None:
    return record.rec_headers.get_header(name)


# --- from Scrapy's objects -----------------------------------------------------------------------


def test_the_request_is_archived_as_sent_with_host_last_and_without_proxy_credentials() -> None:
    request = Request(
        "http://example.com:8080/a;p?q=1#top",
        headers={"Accept": "text/html", "Proxy-Authorization": "Basic c2VjcmV0", "User-Agent": "crawler"},
    )
    response = Response(request.url, request=request, protocol="HTTP/1.1")
    exchange = captured(request, response, WHEN)
    assert exchange.target == "/a;p?q=1"
    assert exchange.request_headers == [
        ("Accept", "text/html"),
        ("User-Agent", "crawler"),
        ("Host", "example.com:8080"),
    ]
    assert exchange.method == "GET" and exchange.date == WHEN


def test_the_response_keeps_values_and_order_as_received() -> None:
    request = Request("http://example.com/")
    # As the HTTP client hands them over: bytes, whatever their encoding.
    headers = [("Set-Cookie", b"a=1"), ("Content-Type", b"text/html"), ("Set-Cookie", b"b=2"), ("X-Name", b"caf\xe9")]
    response = Response(
        request.url,
        status=404,
        headers={name: [v for n, v in headers if n == name] for name, _ in headers},
        body=PAGE,
        request=request,
        ip_address=ip_address("192.0.2.7"),
        protocol="HTTP/1.0",
    )
    exchange = captured(request, response, WHEN, stored_digest="sha1:X")
    assert exchange.response_headers == [
        ("Set-Cookie", "a=1"),
        ("Set-Cookie", "b=2"),
        ("Content-Type", "text/html"),
        ("X-Name", "caf\xe9"),
    ]
    assert (exchange.status, exchange.payload, exchange.protocol) == (404, PAGE, "HTTP/1.0")
    assert (exchange.ip_address, exchange.stored_digest, exchange.truncated) == ("192.0.2.7", "sha1:X", None)


@pytest.mark.parametrize(
    ("flags", "truncated"), [([], None), (["download_stopped"], "length"), (["dataloss"], "disconnect")]
)
def test_a_body_scrapy_did_not_get_whole_is_marked_truncated(flags: list[str], truncated: str | None) -> None:
    request = Request("http://example.com/robots.txt")
    assert captured(request, Response(request.url, flags=flags, request=request), WHEN).truncated == truncated


@pytest.mark.parametrize(
    ("protocol", "line"), [("HTTP/1.1", "HTTP/1.1"), ("HTTP/1.0", "HTTP/1.0"), ("h2", "HTTP/2"), (None, "HTTP/1.1")]
)
def test_the_status_line_follows_the_protocol_scrapy_saw(protocol: str | None, line: str) -> None:
    assert status_line_protocol(protocol) == line


# --- records -------------------------------------------------------------------------------------


def test_a_fetch_is_a_response_record_and_its_request_record() -> None:
    response, request = RecordMaker().fetch(_exchange())
    (read_response, payload), (read_request, request_payload) = _read(response, request)

    assert read_response.rec_type == "response" and read_request.rec_type == "request"
    assert payload == PAGE  # compressed as the server sent it
    digester = Digester("sha1")
    digester.update(PAGE)
    assert _warc(read_response, "WARC-Payload-Digest") == str(digester) == payload_digest(PAGE)
    assert (
        _warc(read_response, "WARC-Target-URI")
        == _warc(read_request, "WARC-Target-URI")
        == "http://example.com/a;p?q=1"
    )
    assert _warc(read_response, "WARC-Date") == _warc(read_request, "WARC-Date") == "2026-05-04T03:02:01.123456Z"
    assert _warc(read_response, "WARC-IP-Address") == "192.0.2.7"
    assert _warc(read_request, "WARC-Concurrent-To") == record_id(response) == _warc(read_response, "WARC-Record-ID")
    assert read_response.rec_headers.protocol == "WARC/1.1"
    assert [name for name, _ in read_response.rec_headers.headers][:2] == ["WARC-Type", "WARC-Record-ID"]
    assert read_response.http_headers.to_str().splitlines()[:3] == [
        "HTTP/1.1 200 OK",
        "Content-Type: text/html",
        "Content-Encoding: gzip",
    ]
    assert read_request.http_headers.to_str().splitlines()[:2] == ["GET /a;p?q=1 HTTP/1.1", "User-Agent: crawler"]
    assert request_payload == b""
    assert _warc(read_response, "WARC-Truncated") is None


def test_header_values_are_written_back_as_the_bytes_received() -> None:
    response, _ = RecordMaker().fetch(_exchange(response_headers=[("Content-Disposition", "inline; filename=caf\xe9")]))
    assert b"\r\nContent-Disposition: inline; filename=caf\xe9\r\n" in gzip.decompress(serialized(response))


def test_an_unknown_status_has_no_reason_phrase_and_a_cut_body_says_why() -> None:
    response, _ = RecordMaker().fetch(_exchange(status=599, truncated="length"))
    ((read, _),) = _read(response)
    assert read.http_headers.statusline == "599"
    assert _warc(read, "WARC-Truncated") == "length"


def test_a_304_is_a_revisit_naming_the_stored_copy() -> None:
    stored = payload_digest(PAGE)
    revisit, request = RecordMaker().fetch(_exchange(status=304, payload=b"", stored_digest=stored))
    (read, payload), (read_request, _) = _read(revisit, request)
    assert read.rec_type == "revisit" and payload == b""
    assert _warc(read, "WARC-Profile") == NOT_MODIFIED
    assert _warc(read, "WARC-Payload-Digest") == stored
    assert _warc(read, "WARC-Refers-To-Target-URI") == "http://example.com/a;p?q=1"
    assert read.http_headers.statusline == "304 Not Modified"
    assert _warc(read_request, "WARC-Concurrent-To") == _warc(read, "WARC-Record-ID")


def test_a_304_without_a_stored_digest_names_none() -> None:
    revisit, _ = RecordMaker().fetch(_exchange(status=304, payload=b""))
    ((read, _),) = _read(revisit)
    assert read.rec_type == "revisit" and _warc(read, "WARC-Payload-Digest") is None


def test_the_same_payload_again_is_a_revisit_and_another_one_a_response() -> None:
    maker = RecordMaker()
    same, _ = maker.fetch(_exchange(stored_digest=payload_digest(PAGE)))
    ((read, payload),) = _read(same)
    assert (read.rec_type, _warc(read, "WARC-Profile"), payload) == ("revisit", IDENTICAL_PAYLOAD, b"")
    assert _warc(read, "WARC-Payload-Digest") == payload_digest(PAGE)
    assert read.http_headers.statusline == "200 OK"  # the headers of this visit

    changed, _ = maker.fetch(_exchange(stored_digest=payload_digest(b"an older copy")))
    assert _read(changed)[0][1] == PAGE


@pytest.mark.parametrize(
    ("status", "stored", "profile"),
    [
        (304, None, NOT_MODIFIED),
        (304, "sha1:OTHER", NOT_MODIFIED),
        (200, "sha1:SAME", IDENTICAL_PAYLOAD),
        (404, "sha1:SAME", IDENTICAL_PAYLOAD),
        (200, "sha1:OTHER", None),
        (200, None, None),
    ],
)
def test_revisit_profiles(status: int, stored: str | None, profile: str | None) -> None:
    assert revisit_profile(status, "sha1:SAME", stored) == profile


def test_outlinks_are_a_metadata_record_beside_the_response() -> None:
    record = RecordMaker().outlinks(
        "http://example.com/", "<urn:uuid:x>", ["http://example.com/a", "http://b.org/"], WHEN
    )
    ((read, payload),) = _read(record)
    assert read.rec_type == "metadata"
    assert _warc(read, "Content-Type") == "application/warc-fields"
    assert _warc(read, "WARC-Concurrent-To") == "<urn:uuid:x>"
    assert payload == b"outlink: http://example.com/a\r\noutlink: http://b.org/\r\n"


def test_a_warcinfo_record_names_its_file() -> None:
    record = RecordMaker().warcinfo("a.warc.gz", {"software": "crawler", "isPartOf": "crawl"})
    ((read, payload),) = _read(record)
    assert (read.rec_type, _warc(read, "WARC-Filename")) == ("warcinfo", "a.warc.gz")
    assert payload == b"software: crawler\r\nisPartOf: crawl\r\n"


def test_each_record_is_one_whole_gzip_member() -> None:
    member = serialized(RecordMaker().fetch(_exchange())[0])
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    record = decompressor.decompress(member)
    assert decompressor.eof and decompressor.unused_data == b""
    assert record.startswith(b"WARC/1.1\r\n") and record.endswith(b"\r\n\r\n")


# --- names and where a record went ---------------------------------------------------------------


def test_file_names_sort_by_time_and_name_their_writer() -> None:
    name = warc_name("crawler", WHEN, 7, "host.example:4242:job/1")
    assert name == "crawler-20260504030201123-00007-host.example-4242-job-1.warc.gz"
    assert index_name(name) == "crawler-20260504030201123-00007-host.example-4242-job-1.cdxj"


def test_where_a_record_went_travels_as_plain_meta() -> None:
    archived = Archived("a.warc.gz", 1234, "<urn:uuid:x>", "sha1:D")
    assert archived_in({"warc_archived": archived.as_meta()}) == archived
    assert archived_in({}) is None

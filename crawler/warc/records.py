"""WARC/1.1 records of the crawl, made with warcio, and their bytes: each record one gzip member.
Pure: records are built and serialised in memory; ``crawler.warc.files`` writes them.

A fetch is a ``request`` record and a ``response`` record, or a ``revisit`` record where the
response repeats a copy the crawl has (``revisit_profile``); a page's outlinks are a
``metadata`` record; every file starts with a ``warcinfo`` record.
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from http import HTTPStatus
from io import BytesIO

from warcio.recordbuilder import RecordBuilder
from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParser
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

from crawler.warc.exchange import Exchange

WARC_VERSION = "1.1"
NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
IDENTICAL_PAYLOAD = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
GZIP_LEVEL = 6
"""warcio's own writer compresses at 9: 1.7 times the CPU of 6 for records 1 % smaller
(``docs/design-notes.md``)."""


class _ExactHeaders(StatusAndHeaders):
    """HTTP headers written back as the bytes they were read from (latin-1 both ways), where
    warcio would percent-encode a value that is not ASCII."""

    def compute_headers_buffer(self, header_filter: object = None) -> None:
        self.headers_buff = self.to_bytes(header_filter, encoding="latin-1")


def payload_digest(payload: bytes) -> str:
    """``WARC-Payload-Digest`` of ``payload``: SHA-1 in base 32, as warcio writes it."""
    return "sha1:" + base64.b32encode(hashlib.sha1(payload).digest()).decode("ascii")


def revisit_profile(status: int, digest: str, stored_digest: str | None) -> str | None:
    """The revisit profile of a response that repeats a copy the crawl has: a 304 (the server
    says it did not change), or a payload identical to the stored copy's; None for any other."""
    if status == 304:
        return NOT_MODIFIED
    if digest == stored_digest:
        return IDENTICAL_PAYLOAD
    return None


class RecordMaker:
    def __init__(self) -> None:
        self.builder = RecordBuilder(warc_version=WARC_VERSION)

    def fetch(self, exchange: Exchange) -> tuple[ArcWarcRecord, ArcWarcRecord]:
        """The response (or revisit) record of ``exchange``, then its request record."""
        digest = payload_digest(exchange.payload)
        profile = revisit_profile(exchange.status, digest, exchange.stored_digest)
        http = _ExactHeaders(
            f"{exchange.status} {_reason(exchange.status)}".rstrip(),
            exchange.response_headers,
            protocol=exchange.protocol,
        )
        date = _warc_date(exchange.date)
        fields = {"WARC-Date": date}
        if exchange.ip_address:
            fields["WARC-IP-Address"] = exchange.ip_address
        if profile is None:
            fields["WARC-Payload-Digest"] = digest
            if exchange.truncated:
                fields["WARC-Truncated"] = exchange.truncated
            answer = self._record(exchange.url, "response", fields, http, exchange.payload)
        else:
            # A 304 names the stored copy's digest, by which replay tools find that copy.
            known = digest if profile == IDENTICAL_PAYLOAD else exchange.stored_digest
            fields |= {"WARC-Profile": profile, "WARC-Refers-To-Target-URI": exchange.url}
            if known:
                fields["WARC-Payload-Digest"] = known
            answer = self._record(exchange.url, "revisit", fields, http, b"")
        request_line = _ExactHeaders(
            f"{exchange.target} {exchange.protocol}", exchange.request_headers, protocol=exchange.method
        )
        fields = {"WARC-Date": date, "WARC-Concurrent-To": record_id(answer)}
        request = self._record(exchange.url, "request", fields, request_line, exchange.request_body)
        return answer, request

    def outlinks(self, url: str, concurrent_to: str, links: Iterable[str], date: datetime) -> ArcWarcRecord:
        """A ``metadata`` record of a page's outlinks (``outlink: URL`` lines, as Heritrix writes them)."""
        body = "".join(f"outlink: {link}\r\n" for link in links).encode("utf-8")
        fields = {"WARC-Date": _warc_date(date), "WARC-Concurrent-To": concurrent_to}
        return self.builder.create_warc_record(
            url,
            "metadata",
            payload=BytesIO(body),
            length=len(body),
            warc_content_type="application/warc-fields",
            warc_headers_dict=_first_fields("metadata") | fields,
        )

    def warcinfo(self, filename: str, info: Mapping[str, str]) -> ArcWarcRecord:
        """The ``warcinfo`` record that opens the file ``filename``."""
        return self.builder.create_warcinfo_record(filename, dict(info))

    def _record(
        self, url: str, kind: str, fields: dict[str, str], http: StatusAndHeaders, payload: bytes
    ) -> ArcWarcRecord:
        return self.builder.create_warc_record(
            url,
            kind,
            payload=BytesIO(payload),
            length=len(payload),
            warc_headers_dict=_first_fields(kind) | fields,
            http_headers=http,
        )


def record_id(record: ArcWarcRecord) -> str:
    return record.rec_headers.get_header("WARC-Record-ID")


def serialized(record: ArcWarcRecord) -> bytes:
    """The record as one gzip member."""
    buffer = BytesIO()
    WARCWriter(buffer, gzip=False, warc_version=WARC_VERSION).write_record(record)
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return compressor.compress(buffer.getvalue()) + compressor.flush()


def _first_fields(kind: str) -> dict[str, str]:
    # Type and id first, as Heritrix writes them (warcio would add them last).
    return {"WARC-Type": kind, "WARC-Record-ID": StatusAndHeadersParser.make_warc_id()}


def _warc_date(moment: datetime) -> str:
    return datetime_to_iso_date(moment.astimezone(UTC).replace(tzinfo=None), use_micros=True)


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""

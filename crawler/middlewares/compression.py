"""Scrapy's ``HttpCompressionMiddleware`` without charset detection on compressed bytes.

Scrapy 2.19 builds the decompressed response with ``response.replace(body=…, encoding=None)``,
and ``replace`` reads every attribute of the old response first, ``encoding`` included, even
the ones it is given. For HTML whose ``Content-Type`` names no charset, reading ``encoding``
of the still compressed response decodes the gzip bytes and runs charset_normalizer over them
(its result thrown away): 13% of the crawl's CPU on a real documentation site. Here the
compressed response is handed on as a plain ``Response``, which has no ``encoding`` to read;
Scrapy's middleware then picks the response class and the encoding from the decompressed body,
as before.

A gzip body is also decompressed in one call to zlib, where Scrapy's ``gunzip`` reads it through
``GzipFile`` 64 KiB at a time and computes its CRC in a second pass; anything but one whole,
sound gzip member (several members, a damaged or cut stream) goes to Scrapy's ``gunzip``, which
keeps what such a stream gives. One difference: a stream damaged past the size limit is refused
as too large (Scrapy would raise zlib's error when the damage falls in its first 64 KiB); the
response is dropped either way.
"""

from __future__ import annotations

import zlib

from scrapy import Request
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.http import Response, TextResponse
from scrapy.utils._compression import _DecompressionMaxSizeExceeded
from scrapy.utils.gz import gunzip as gunzip_in_chunks

GZIP = frozenset((b"gzip", b"x-gzip"))


class CompressedBodyMiddleware(HttpCompressionMiddleware):
    def process_response(self, request: Request, response: Response) -> Request | Response:  # type: ignore[override]
        if isinstance(response, TextResponse) and request.method != "HEAD" and b"Content-Encoding" in response.headers:
            response = Response(**{name: getattr(response, name) for name in Response.attributes})
        return super().process_response(request, response)

    @staticmethod
    def _decode(body: bytes, encoding: bytes, max_size: int) -> bytes:
        if encoding in GZIP:
            return gunzip(body, max_size)
        return HttpCompressionMiddleware._decode(body, encoding, max_size)


def gunzip(data: bytes, max_size: int = 0) -> bytes:
    """``data`` decompressed, up to ``max_size`` bytes (0: any size; more raises the error
    Scrapy's middleware turns into an ignored response)."""
    decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        body = decompressor.decompress(data, max_size + 1 if max_size else 0)
    except zlib.error:
        return gunzip_in_chunks(data, max_size=max_size)
    if max_size and len(body) > max_size:
        raise _DecompressionMaxSizeExceeded(len(body), max_size)
    if not decompressor.eof or decompressor.unused_data:
        return gunzip_in_chunks(data, max_size=max_size)
    return body

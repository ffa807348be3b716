"""Scrapy's ``HttpCompressionMiddleware`` without charset detection on compressed bytes, and
gzip in one call to zlib-ng.

Scrapy builds the decompressed response with ``response.replace``, which reads every attribute
of the old one, ``encoding`` included: for HTML whose ``Content-Type`` names no charset, that
decodes the still compressed bytes to guess a charset that is thrown away. Here the compressed
response is handed on as a plain ``Response``, which has no encoding to read; Scrapy's
middleware then picks the response class and the encoding from the decompressed body, as before.

One whole, sound gzip member is decompressed in one call to zlib-ng (zlib's format, inflated
in about half zlib's time); anything else (several members, a damaged or cut stream) goes to
Scrapy's ``gunzip``, which keeps what such a stream gives. One difference: a stream damaged
past the size limit is refused as too large (Scrapy would raise zlib's error when the damage
falls in its first 64 KiB); the response is dropped either way. ``docs/design-notes.md`` has the measurements behind both.
"""

from __future__ import annotations

from scrapy import Request
from scrapy.http import Response, TextResponse
from scrapy.utils.gz import gunzip as gunzip_in_chunks
from zlib_ng import zlib_ng

from crawler.compat import DecodingCompressionMiddleware, DecompressionMaxSizeExceeded

GZIP = frozenset((b"gzip", b"x-gzip"))


class CompressedBodyMiddleware(DecodingCompressionMiddleware):
    def process_response(self, request: Request, response: Response) -> Request | Response:  # type: ignore[override]
        if isinstance(response, TextResponse) and request.method != "HEAD" and b"Content-Encoding" in response.headers:
            response = Response(**{name: getattr(response, name) for name in Response.attributes})
        return super().process_response(request, response)

    def decode(self, body: bytes, encoding: bytes, max_size: int) -> bytes:
        if encoding in GZIP:
            return gunzip(body, max_size)
        return super().decode(body, encoding, max_size)


def gunzip(data: bytes, max_size: int = 0) -> bytes:
    """``data`` decompressed, up to ``max_size`` bytes (0: any size; more raises the error
    Scrapy's middleware turns into an ignored response)."""
    decompressor = zlib_ng.decompressobj(wbits=16 + zlib_ng.MAX_WBITS)
    try:
        body = decompressor.decompress(data, max_size + 1 if max_size else 0)
    except zlib_ng.error:
        return gunzip_in_chunks(data, max_size=max_size)
    if max_size and len(body) > max_size:
        raise DecompressionMaxSizeExceeded(len(body), max_size)
    if not decompressor.eof or decompressor.unused_data:
        return gunzip_in_chunks(data, max_size=max_size)
    return body

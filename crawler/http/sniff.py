"""Is a body served as text really binary? Pure, on the first bytes (WHATWG MIME sniffing's
signatures and its binary data bytes)."""

from __future__ import annotations

SNIFF_BYTES = 1445
"""How much of the body the WHATWG algorithm looks at."""

_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"%PDF-", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive"),
    (b"\x1f\x8b\x08", "gzip data"),
    (b"\xfd7zXZ\x00", "xz data"),
    (b"(\xb5/\xfd", "zstd data"),
    (b"7z\xbc\xaf'\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"\x7fELF", "an ELF executable"),
    (b"\x00asm", "WebAssembly"),
    (b"OggS\x00", "Ogg media"),
    (b"\x1aE\xdf\xa3", "Matroska/WebM media"),
    (b"wOFF", "a WOFF font"),
    (b"wOF2", "a WOFF2 font"),
    (b"\x00\x00\x01\x00", "an icon"),
)
_BINARY_BYTES = frozenset({*range(0x00, 0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)})
_TEXT_BYTES = bytes(byte for byte in range(256) if byte not in _BINARY_BYTES)
_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")
BINARY_SHARE = 0.1
"""Past this share of binary data bytes the body is binary: a stray NUL in broken HTML is not."""


def binary_kind(body: bytes) -> str | None:
    """What binary content ``body`` starts with (``a PNG image``), or None if it may be text."""
    head = body[:SNIFF_BYTES]
    for signature, kind in _SIGNATURES:
        if head.startswith(signature):
            return kind
    if head[4:8] == b"ftyp":
        return "MP4 media"
    if head.startswith(b"RIFF") and head[8:12] in (b"WEBP", b"WAVE", b"AVI "):
        return "RIFF media"
    if not head or head.startswith(_BOMS):  # UTF-16 text is full of NULs
        return None
    binary = len(head.translate(None, _TEXT_BYTES))  # the binary data bytes, counted in C
    return "binary data" if binary > BINARY_SHARE * len(head) else None

"""SimHash (Charikar) of a text: 64 bits, over the shingles of three words; near-duplicate texts
get fingerprints a few bits apart, unrelated ones about 32.

Written by hand because no maintained library fits: the ones on PyPI hash each feature in
Python (MD5 of every character 4-gram, with numpy) or through Python's ``hash()``, which differs
from process to process where a fingerprint must be stored and shared. Here every step over
the words runs in C: a CRC-32 of each word (``map``), and big integers as vectors of 32-bit
lanes for the rest: a shingle's 64 bits are two XORs of its three words' CRCs, each rotated by
whole bytes for its place in the shingle (``"a b c"`` is not ``"c b a"``), and the count of
shingles with each bit set is the ``bit_count`` of one mask over all shingles at once. About
0.5 ms of CPU a page of the Python documentation, 3,000 words on average
(``bench/twins_corpus.py``): the split and the CRC of each word take half of it.
"""

from __future__ import annotations

import sys
from array import array
from zlib import crc32

SHINGLE_WORDS = 3
MIN_WORDS = 8
"""Texts of fewer words get no fingerprint: a title and a line say too little to call two pages
the same (every empty page would be the twin of every other)."""
BITS = 64

_ORDER = sys.byteorder  # the lanes are read as array("I") wrote them
# The byte rotations that give each word of a shingle its place, in the high and the low half.
_HIGH = ((0, 0), (1, 1), (2, 2))
_LOW = ((0, 3), (1, 2), (2, 0))


def simhash(text: str) -> int | None:
    """The 64-bit SimHash of ``text``'s shingles (words split on whitespace), or None for a
    text of fewer than ``MIN_WORDS`` words."""
    # Every word counts: reading only the ends of long texts made the whole index of the Python
    # documentation (43,000 words) the twin of its first section (3 bits apart).
    words = text.encode("utf-8", "surrogatepass").split()
    if len(words) < MIN_WORDS:
        return None
    crcs = array("I", map(crc32, words)).tobytes()
    rotated = [int.from_bytes(_rotated(crcs, by), _ORDER) for by in range(4)]
    size = len(words)
    shingles = size - SHINGLE_WORDS + 1
    return _majority(_combined(rotated, _HIGH), size, shingles) << 32 | _majority(
        _combined(rotated, _LOW), size, shingles
    )


def distance(a: int, b: int) -> int:
    """The Hamming distance of two fingerprints: how many bits differ."""
    return (a ^ b).bit_count()


def blocks(fingerprint: int, count: int) -> list[int]:
    """``fingerprint`` cut into ``count`` blocks of (nearly) equal width, each tagged with its
    place: two fingerprints at most ``count - 1`` bits apart share at least one block (the
    pigeonhole principle), so an index of blocks finds every candidate within that distance."""
    found, start = [], 0
    for number in range(count):
        width = BITS // count + (1 if number < BITS % count else 0)
        found.append(number << BITS | (fingerprint >> start) & ((1 << width) - 1))
        start += width
    return found


def as_hex(fingerprint: int) -> str:
    return f"{fingerprint:016x}"


def _rotated(lanes: bytes, by: int) -> bytes | bytearray:
    """Every 4-byte lane rotated left by ``by`` bytes (strided copies: no arithmetic)."""
    if by == 0:
        return lanes
    out = bytearray(len(lanes))
    for byte in range(4):
        out[(byte + by) % 4 :: 4] = lanes[byte::4]
    return out


def _combined(rotated: list[int], places: tuple[tuple[int, int], ...]) -> int:
    """Lane i: the XOR of the words i + offset, each rotated as its place says."""
    combined = 0
    for offset, by in places:
        combined ^= rotated[by] >> (32 * offset)
    return combined


def _majority(lanes: int, size: int, shingles: int) -> int:
    """The 32 bits set in more than half of the first ``shingles`` lanes."""
    data = lanes.to_bytes(4 * size, _ORDER)[: 4 * shingles]
    ones = int.from_bytes(b"\x01" * shingles, _ORDER)
    masks = [ones << bit for bit in range(8)]
    bits = 0
    for byte in range(4):
        column = int.from_bytes(data[byte::4], _ORDER)
        for bit, mask in enumerate(masks):
            if 2 * (column & mask).bit_count() > shingles:
                bits |= 1 << (8 * byte + bit)
    return bits

"""SimHash (Charikar) of a text: 64 bits, over the shingles of three words; near-duplicate texts
get fingerprints a few bits apart, unrelated ones about 32.

Written by hand because no maintained library fits: the ones on PyPI hash each feature in
Python (MD5 of every character 4-gram, with numpy) or through Python's ``hash()``, which differs
from process to process where a fingerprint must be stored and shared. Here every step over
the words runs in C: a CRC-32 of each word (``map``), and big integers as vectors of 32-bit
lanes for the rest: a shingle's 64 bits are two XORs of its three words' CRCs, each rotated by
its place in the shingle (``"a b c"`` is not ``"c b a"``), and the count of shingles with each
bit set is the ``bit_count`` of one mask over all shingles at once. About 0.6 ms for a page of
3,000 words (``bench/twins_corpus.py``).
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
_LANE = 0xFFFFFFFF
# The rotations that give each word of a shingle its place, in the high and the low half.
_HIGH = ((0, 0), (1, 11), (2, 22))
_LOW = ((2, 0), (0, 7), (1, 25))


def simhash(text: str) -> int | None:
    """The 64-bit SimHash of ``text``'s shingles (words split on whitespace), or None for a
    text of fewer than ``MIN_WORDS`` words."""
    words = text.encode("utf-8", "surrogatepass").split()
    if len(words) < MIN_WORDS:
        return None
    lanes = int.from_bytes(array("I", map(crc32, words)).tobytes(), _ORDER)
    size = len(words)
    shingles = size - SHINGLE_WORDS + 1
    high = _combined(lanes, size, _HIGH)
    low = _combined(lanes, size, _LOW)
    return _majority(high, shingles) << 32 | _majority(low, shingles)


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


def _repeated(lane: int, size: int) -> int:
    return int.from_bytes(lane.to_bytes(4, _ORDER) * size, _ORDER)


def _rotated(lanes: int, size: int, by: int) -> int:
    """Every 32-bit lane rotated left by ``by`` bits."""
    if by == 0:
        return lanes
    up = (lanes << by) & _repeated((_LANE << by) & _LANE, size)
    down = (lanes >> (32 - by)) & _repeated((1 << by) - 1, size)
    return up | down


def _combined(lanes: int, size: int, places: tuple[tuple[int, int], ...]) -> int:
    """Lane i: the XOR of the words i + offset, each rotated as its place says."""
    combined = 0
    for offset, by in places:
        combined ^= _rotated(lanes, size, by) >> (32 * offset)
    return combined


def _majority(lanes: int, shingles: int) -> int:
    """The 32 bits set in more than half of the first ``shingles`` lanes."""
    data = lanes.to_bytes(4 * (shingles + SHINGLE_WORDS), _ORDER)[: 4 * shingles]
    ones = int.from_bytes(b"\x01" * shingles, _ORDER)
    bits = 0
    for byte in range(4):
        column = int.from_bytes(data[byte::4], _ORDER)
        for bit in range(8):
            if 2 * (column & (ones << bit)).bit_count() > shingles:
                bits |= 1 << (8 * byte + bit)
    return bits

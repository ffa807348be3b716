"""SimHash (Charikar) of a text: 64 bits, over the shingles of three words; near-duplicate texts
get fingerprints a few bits apart, unrelated ones about 32.

Written by hand because no maintained library fits: the ones on PyPI hash each feature in
Python (MD5 of every character 4-gram, with numpy) or through Python's ``hash()``, which differs
from process to process where a fingerprint must be stored and shared. Here every step over
the words runs in C: a CRC-32 of each word (``map``), and big integers as vectors of four bits a
word for the rest. A shingle's 64 bits are two XORs of its three words' CRCs, each rotated by
whole bytes for its place in the shingle (``"a b c"`` is not ``"c b a"``). Held as eight
columns, the n-th nibble of every word's CRC, a rotation by whole bytes is the choice of a
column and the next word a shift by four bits, so each nibble of every shingle is two XORs of
columns, and the count of shingles with a bit set is a mask and a ``bit_count``. ``bit_count``
is CPython's slow step on these integers (ten times an AND), so lanes of four bits rather than
eight halve it. The split and the CRC of each word take most of the CPU
(``bench/twins_corpus.py``; docs/design-notes.md): the extraction hands over the squashed text's
UTF-8 (``simhash_of_utf8``), whose words the compiled module reads in place, without a bytes
object a word.

That Python is the floor of a C call a word, so where it is built (``scripts/compile.sh``) the
same fingerprint comes from C (``_simhash.c``), in one call a page and five times faster; the
Python one runs where it is not (``COMPILED`` says which), and the tests hold both to the same
textbook reference.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable
from zlib import crc32

_compiled: Callable[[list[bytes]], int] | None
_compiled_text: Callable[[bytes, int], int | None] | None
try:
    from crawler.twins._simhash import simhash_of_text as _compiled_text
    from crawler.twins._simhash import simhash_of_words as _compiled
except ImportError:  # not built: no C compiler where the crawler was installed
    _compiled = _compiled_text = None

COMPILED = _compiled is not None
"""Whether the fingerprints come from the compiled module."""

SHINGLE_WORDS = 3
MIN_WORDS = 8
"""Texts of fewer words get no fingerprint: a title and a line say too little to call two pages
the same (every empty page would be the twin of every other)."""
BITS = 64

# Each word's place in a shingle, as (place, byte rotation of its CRC), in the high and the low half.
_HIGH = ((0, 0), (1, 1), (2, 2))
_LOW = ((0, 3), (1, 2), (2, 0))


def simhash(text: str) -> int | None:
    """The 64-bit SimHash of ``text``'s shingles (words split on ASCII whitespace), or None for
    a text of fewer than ``MIN_WORDS`` words."""
    return simhash_of_words(text.encode("utf-8", "surrogatepass").split())


def simhash_of_utf8(text: bytes) -> int | None:
    """``simhash`` of the text whose UTF-8 is ``text``: where the module is compiled, its words
    are read in place, without a bytes object a word (extraction hands its text over this way)."""
    if _compiled_text is not None:
        return _compiled_text(text, MIN_WORDS)
    return simhash_of_words(text.split())


def simhash_of_words(words: list[bytes]) -> int | None:
    """``simhash`` of the text whose UTF-8 ``bytes.split`` gives ``words``: for a caller that
    split the text already (extraction: the split is a third of the cost)."""
    # Every word counts: reading only the ends of long texts made the whole index of the Python
    # documentation (43,000 words) the twin of its first section (3 bits apart).
    if len(words) < MIN_WORDS:
        return None
    return _compiled(words) if _compiled is not None else simhash_in_python(words)


def simhash_in_python(words: list[bytes]) -> int:
    """``simhash_of_words`` in Python, of at least ``SHINGLE_WORDS`` words."""
    crcs = array("I", map(crc32, words))
    if sys.byteorder != "little":
        crcs.byteswap()
    if len(crcs) % 2:
        crcs.append(0)  # a word past the last shingle: the words go in pairs, a byte of a column each
    data = crcs.tobytes()
    low = int.from_bytes(b"\x0f" * (len(crcs) // 2), "little")
    columns = []  # columns[n]: the n-th nibble of every word's CRC, four bits a word
    for byte in range(4):
        even, odd = (int.from_bytes(data[4 * word + byte :: 8], "little") for word in range(2))
        columns += [even & low | (odd & low) << 4, even >> 4 & low | odd & low << 4]
    # by_place[place][nibble]: that column from the word at ``place`` in the shingle on
    by_place = [columns, *([column >> 4 * place for column in columns] for place in range(1, SHINGLE_WORDS))]
    shingles = len(words) - SHINGLE_WORDS + 1
    # a bit for each shingle, in each lane of four bits: also drops the words past the last shingle
    ones = int.from_bytes(b"\x11" * (shingles // 2) + b"\x01" * (shingles % 2), "little")
    masks = [ones << bit for bit in range(4)]
    return _majority(by_place, _HIGH, masks, shingles) << 32 | _majority(by_place, _LOW, masks, shingles)


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


def _majority(by_place: list[list[int]], places: tuple[tuple[int, int], ...], masks: list[int], shingles: int) -> int:
    """The 32 bits of one half set in more than half of the shingles."""
    bits = 0
    for nibble in range(8):
        combined = 0
        for place, rotation in places:
            combined ^= by_place[place][(nibble - 2 * rotation) % 8]
        for bit, mask in enumerate(masks):
            if 2 * (combined & mask).bit_count() > shingles:
                bits |= 1 << (4 * nibble + bit)
    return bits

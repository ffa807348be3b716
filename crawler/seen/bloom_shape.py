"""A Bloom filter's arithmetic: its size for a capacity and error rate, and where a request's
bits lie. Pure: no Redis here (``bloom.py`` keeps the bits).

The filter is split into blocks of at most ``MAX_BLOCK_BITS`` bits, each its own Redis string,
and all of a request's bits lie in one block: one key a request (so the frontier script touches
a single key, which Redis Cluster needs), and no string near Redis's 512 MiB limit. A block
holds a standard filter of ``bits`` bits and ``hashes`` hash functions for its share of the
capacity. Positions come from the request fingerprint by enhanced double hashing (Kirsch and
Mitzenmacher), so no hash is computed twice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_BLOCK_BITS = 1 << 27
"""16 MiB a block: large enough that a crawl of a billion URLs needs a few hundred keys."""


@dataclass(frozen=True, slots=True)
class BloomShape:
    blocks: int
    bits: int
    """Bits of one block."""
    hashes: int
    capacity: int
    error_rate: float

    @classmethod
    def for_capacity(cls, capacity: int, error_rate: float, max_block_bits: int = MAX_BLOCK_BITS) -> BloomShape:
        """The smallest filter that holds ``capacity`` requests at ``error_rate`` false positives."""
        if capacity < 1:
            raise ValueError(f"a Bloom filter's capacity must be at least 1, not {capacity}")
        if not 0 < error_rate < 1:
            raise ValueError(f"a Bloom filter's error rate must lie between 0 and 1, not {error_rate}")
        total_bits = math.ceil(-capacity * math.log(error_rate) / math.log(2) ** 2)
        blocks = math.ceil(total_bits / max_block_bits)
        bits = math.ceil(total_bits / blocks)
        hashes = max(1, round(bits * blocks / capacity * math.log(2)))
        return cls(blocks, bits, hashes, capacity, error_rate)

    @property
    def total_bytes(self) -> int:
        return self.blocks * math.ceil(self.bits / 8)

    @property
    def bytes_per_request(self) -> float:
        return self.total_bytes / self.capacity

    def expected_error_rate(self, count: int) -> float:
        """The false-positive rate once ``count`` requests are in (even spread over blocks)."""
        per_block = count / self.blocks
        return (1 - math.exp(-self.hashes * per_block / self.bits)) ** self.hashes

    def positions(self, fingerprint: bytes) -> tuple[int, list[int]]:
        """The block of a request and its bit offsets in it, from its fingerprint (at least
        20 bytes: Scrapy's SHA-1 request fingerprint)."""
        if len(fingerprint) < 20:
            raise ValueError(f"a fingerprint of at least 20 bytes is needed, not {len(fingerprint)}")
        h1 = int.from_bytes(fingerprint[0:8], "big")
        h2 = int.from_bytes(fingerprint[8:16], "big") | 1
        block = int.from_bytes(fingerprint[16:20], "big") % self.blocks
        bits = self.bits
        offsets = []
        for i in range(self.hashes):
            offsets.append(h1 % bits)
            h1 += h2
            h2 += i + 1
        return block, offsets

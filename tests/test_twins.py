"""Near-duplicates: the SimHash of a text against a plain reference, its distances, the blocks
that find candidates, and each site's index, in the process and in Redis (the same answers)."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable, Iterator
from zlib import crc32

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.redis.keys import delete_matching
from crawler.redis.link import RedisLink
from crawler.twins import simhash as simhash_module
from crawler.twins.index_local import Twin, TwinIndex
from crawler.twins.index_redis import RedisTwinIndex
from crawler.twins.simhash import (
    BITS,
    MIN_WORDS,
    SHINGLE_WORDS,
    as_hex,
    blocks,
    distance,
    simhash,
    simhash_in_python,
)

WORDS = st.text(alphabet="abcdeé日1 ", min_size=1, max_size=6).map(lambda w: w.replace(" ", "") or "x")


def _reference(text: str) -> int | None:
    """SimHash as the textbook writes it, one shingle and one bit at a time."""
    words = text.encode("utf-8", "surrogatepass").split()
    if len(words) < MIN_WORDS:
        return None

    def rotated(value: int, by: int) -> int:
        return ((value << by) | (value >> (32 - by))) & 0xFFFFFFFF if by else value

    crcs = [crc32(word) for word in words]
    counts = [0] * BITS
    shingles = len(words) - SHINGLE_WORDS + 1
    for i in range(shingles):
        a, b, c = crcs[i : i + SHINGLE_WORDS]
        high = a ^ rotated(b, 8) ^ rotated(c, 16)
        low = rotated(a, 24) ^ rotated(b, 16) ^ c
        value = high << 32 | low
        for bit in range(BITS):
            counts[bit] += value >> bit & 1
    return sum(1 << bit for bit in range(BITS) if 2 * counts[bit] > shingles)


COMPILED_MISSING = "crawler/twins/_simhash.c is not built: scripts/compile.sh builds it (it needs a C compiler)"


def _implementation(name: str) -> Callable[[str], int | None]:
    """``simhash`` computed by the compiled module (from the words, or from the text, which it
    splits itself) or by the Python one."""
    if name == "compiled text":
        from_text = simhash_module._compiled_text
        assert from_text is not None, COMPILED_MISSING
        return lambda text: from_text(text.encode("utf-8", "surrogatepass"), MIN_WORDS)
    compute = simhash_module._compiled if name == "compiled" else simhash_in_python
    assert compute is not None, COMPILED_MISSING

    def fingerprint(text: str) -> int | None:
        words = text.encode("utf-8", "surrogatepass").split()
        return compute(words) if len(words) >= MIN_WORDS else None

    return fingerprint


IMPLEMENTATIONS = ("compiled", "compiled text", "python")


def test_the_crawl_takes_the_compiled_simhash() -> None:
    assert simhash_module.COMPILED, COMPILED_MISSING
    text = " ".join(_article(6, 50)).encode()
    words = text.split()
    assert simhash_module.simhash_of_words(words) == simhash_module._compiled(words) == simhash_in_python(words)
    assert simhash_module.simhash_of_utf8(text) == simhash_module.simhash_of_words(words)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from([b"a", b"\xc3\xa9", b" ", b"\t", b"\n", b"\r", b"\x0b", b"\x0c", b"\x1c", b"\xa0"]), max_size=40
    )
)
def test_the_compiled_module_splits_a_text_as_bytes_split_does(pieces: list[bytes]) -> None:
    assert simhash_module._compiled_text is not None, COMPILED_MISSING
    text = b"".join(pieces)
    words = text.split()
    for least in (0, 3, MIN_WORDS):
        expected = simhash_in_python(words) if len(words) >= max(3, least) else None
        assert simhash_module._compiled_text(text, least) == expected


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@settings(max_examples=300, deadline=None)
@given(words=st.lists(WORDS, max_size=60), space=st.sampled_from([" ", "\n", "  \t"]))
def test_the_fingerprint_is_the_textbook_simhash_of_three_word_shingles(
    implementation: str, words: list[str], space: str
) -> None:
    text = space.join(words)
    assert _implementation(implementation)(text) == _reference(text)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("length", [3, 255, 256, 257, 511, 512, 2000])
def test_long_texts_are_the_textbook_simhash_too(implementation: str, length: int) -> None:
    # Few distinct words, so that votes are close and a miscount shows; past 255 shingles the
    # compiled counts are added up from their bytes.
    text = " ".join(f"w{n % 7}{n % 5}" for n in range(length + SHINGLE_WORDS - 1))
    assert _implementation(implementation)(text) == _reference(text)


def test_the_compiled_simhash_refuses_what_is_not_a_list_of_bytes() -> None:
    compute = simhash_module._compiled
    assert compute is not None, COMPILED_MISSING
    with pytest.raises(TypeError, match="a list of bytes, not tuple"):
        compute((b"a", b"b", b"c"))
    with pytest.raises(TypeError, match="a list of bytes, not of str"):
        compute([b"a", "b", b"c"])
    with pytest.raises(ValueError, match="three words"):
        compute([b"a", b"b"])


def test_too_short_a_text_has_no_fingerprint() -> None:
    assert simhash("") is None
    assert simhash(" ".join(["word"] * (MIN_WORDS - 1))) is None
    assert simhash(" ".join(["word"] * MIN_WORDS)) is not None


def _article(seed: int, words: int = 400) -> list[str]:
    rng = random.Random(seed)
    return [f"w{rng.randrange(3000)}" for _ in range(words)]


def test_a_page_that_differs_in_a_few_words_is_a_few_bits_away_and_an_unrelated_one_about_half() -> None:
    near, far = [], []
    for seed in range(40):
        words = _article(seed, 1500)
        changed = list(words)
        for position in (50, 700, 1400):  # a session id in three places
            changed[position] = f"sid{seed}x{position}"
        near.append(distance(simhash(" ".join(words)), simhash(" ".join(changed))))
        far.append(distance(simhash(" ".join(words)), simhash(" ".join(_article(seed + 1000, 1500)))))
    # SimHash is a vote per bit: a few changed shingles flip the bits whose vote was close
    assert sorted(near)[len(near) // 2] <= 3 and max(near) <= 8
    assert min(far) >= 16 and max(far) <= 48


# Fingerprints as earlier versions stored them (``pages.simhash``): a re-crawl compares new pages
# with them, so a faster SimHash must give the same bits.
STORED_FINGERPRINTS = {
    "8 words": (" ".join(_article(1, MIN_WORDS)), "17c2d3026008f431"),
    "9 words": (" ".join(_article(2, 9)), "30869eed1a4b4a0e"),
    "400 words": (" ".join(_article(3, 400)), "8750d3b13c90f26c"),
    "401 words": (" ".join(_article(4, 401)), "f0caa39512fe6cd9"),
    "5000 lines": ("\n".join(_article(5, 5000)), "68b30b8e41ec19a5"),
    "not ASCII": (
        "Les données du café ¶ 日本語 のテキスト \ud800 tab\tseparated  words and more words here",
        "7eda1094c8586484",
    ),
}


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize(("text", "stored"), STORED_FINGERPRINTS.values(), ids=STORED_FINGERPRINTS.keys())
def test_fingerprints_are_those_earlier_versions_stored(implementation: str, text: str, stored: str) -> None:
    assert as_hex(_implementation(implementation)(text)) == stored


def test_word_order_matters() -> None:
    words = _article(1, 100)
    assert simhash(" ".join(words)) != simhash(" ".join(reversed(words)))


@settings(max_examples=500)
@given(st.integers(0, 2**64 - 1), st.integers(0, 7), st.data())
def test_fingerprints_within_a_distance_share_a_block_of_as_many_more_blocks(
    fingerprint: int, max_distance: int, data: st.DataObject
) -> None:
    flipped = data.draw(st.sets(st.integers(0, BITS - 1), max_size=max_distance))
    other = fingerprint
    for bit in flipped:
        other ^= 1 << bit
    assert distance(fingerprint, other) == len(flipped)
    assert set(blocks(fingerprint, max_distance + 1)) & set(blocks(other, max_distance + 1))


def _near(fingerprint: int, bits: int, rng: random.Random) -> int:
    for bit in rng.sample(range(BITS), bits):
        fingerprint ^= 1 << bit
    return fingerprint


def _pages(rng: random.Random, count: int) -> list[tuple[str, int]]:
    """Pages of which many are near others: a few originals and their twins at 0 to 6 bits."""
    originals = [rng.getrandbits(64) for _ in range(max(1, count // 4))]
    return [(f"http://a.test/{n}", _near(rng.choice(originals), rng.randrange(7), rng)) for n in range(count)]


def _brute_force(kept: list[tuple[str, int]], url: str, fingerprint: int, max_distance: int) -> int | None:
    """The distance of the closest kept page within ``max_distance`` other than ``url``."""
    found = [distance(fingerprint, other) for other_url, other in kept if other_url != url]
    best = min(found, default=max_distance + 1)
    return best if best <= max_distance else None


@pytest.mark.parametrize("max_distance", [0, 3, 6])
def test_the_index_finds_the_closest_page_within_the_distance_as_a_scan_of_every_page(max_distance: int) -> None:
    rng = random.Random(max_distance)
    index, kept = TwinIndex(max_distance, capacity=10_000), []
    for url, fingerprint in _pages(rng, 400):
        twin = index.match("a.test", fingerprint, url)
        expected = _brute_force(kept, url, fingerprint, max_distance)
        assert (twin.distance if twin else None) == expected
        if twin is None:
            kept.append((url, fingerprint))
        else:
            assert distance(dict(kept)[twin.url], fingerprint) == twin.distance


def test_a_page_fetched_again_is_not_its_own_twin_and_sites_are_apart() -> None:
    index = TwinIndex(3, capacity=10)
    assert index.match("a.test", 0xFF, "http://a.test/") is None
    assert index.match("a.test", 0xFF, "http://a.test/") is None
    assert index.match("a.test", 0xFE, "http://a.test/copy") == Twin("http://a.test/", 1)
    assert index.match("b.test", 0xFF, "http://b.test/") is None


def test_a_full_site_still_compares_but_keeps_no_more() -> None:
    index = TwinIndex(2, capacity=2)
    assert index.match("a.test", 0, "http://a.test/1") is None
    assert index.match("a.test", 2**64 - 1, "http://a.test/2") is None
    assert index.match("a.test", 0xFFFF << 20, "http://a.test/3") is None  # not kept: full
    assert index.match("a.test", 0xFFFF << 20, "http://a.test/4") is None
    assert index.match("a.test", 1, "http://a.test/5") == Twin("http://a.test/1", 1)


@pytest.fixture
def twin_key(redis_client: redis.Redis) -> Iterator[str]:
    prefix = f"test-twins-{uuid.uuid4().hex[:8]}"
    yield prefix
    delete_matching(redis_client, f"{prefix}:*")


@pytest.mark.parametrize("max_distance", [0, 3, 6])
def test_the_redis_index_answers_as_the_one_in_the_process(
    redis_client: redis.Redis, twin_key: str, max_distance: int
) -> None:
    rng = random.Random(100 + max_distance)
    local = TwinIndex(max_distance, capacity=300)
    shared = RedisTwinIndex(RedisLink(redis_client), twin_key, max_distance, capacity=300)
    pages = _pages(rng, 400)
    pages.append(pages[0])  # fetched again: not its own twin

    async def compare() -> None:
        for url, fingerprint in pages:
            assert await shared.find_or_add("a.test", fingerprint, url) == local.match("a.test", fingerprint, url)

    asyncio.run(compare())
    assert int(redis_client.hget(f"{twin_key}:a.test", "n")) == len(local._sites["a.test"].urls) <= 300

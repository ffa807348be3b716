"""The spread of the URLs over domains and the blocked share that ``bench/frontier_scale.py
--spill`` simulates (``bench/cold_frontier.py``)."""

from __future__ import annotations

from collections import Counter

from bench.cold_frontier import ZipfSites, cold_sites


def test_sites_get_their_zipf_share_of_the_urls() -> None:
    sites, urls = 1_000, 200_000
    counts = Counter(map(ZipfSites(sites, 1.0), range(urls)))
    harmonic = sum(1 / rank for rank in range(1, sites + 1))
    for site in (0, 1, 9, 99):
        expected = urls / (site + 1) / harmonic
        assert abs(counts[site] - expected) <= 0.02 * expected + 2, (site, counts[site], expected)
    assert set(counts) <= set(range(sites))
    assert counts[0] > 100 * counts[sites - 1] > 0  # the head holds far more than the tail


def test_the_same_urls_go_to_the_same_sites_every_run() -> None:
    assert [ZipfSites(500, 1.2)(n) for n in range(1_000)] == [ZipfSites(500, 1.2)(n) for n in range(1_000)]


def test_about_the_share_asked_is_blocked() -> None:
    blocked = cold_sites(10_000, 0.3)
    assert 2_850 <= len(blocked) <= 3_150
    assert blocked == sorted(set(blocked))

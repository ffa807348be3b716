"""The soak's fault schedule and its invariants' judgement (``bench/soak_schedule.py``,
``bench/soak_checks.py``): pure, on made-up log entries."""

from __future__ import annotations

from collections import Counter

import pytest

from bench.realweb import ServedRequest
from bench.soak_checks import (
    BlockCheck,
    DuplicateCheck,
    SpacingCheck,
    Stamp,
    judge_gap,
    judge_hit,
    percentile,
    slope_per_hour,
)
from bench.soak_schedule import PROCESS_FAULTS, SITE_FAULTS, Durations, plan
from bench.soak_web import SoakRequest

DURATIONS = Durations(lease=30, connect_timeout=30, site_outage=180)


def served(host: str, start: float, status: int = 200, path: str = "/a.html", end: float | None = None) -> SoakRequest:
    return SoakRequest(ServedRequest(host, "c", start, end or start + 0.1, status, 100, "GET", path, "HTTP/1.1"), True)


@pytest.mark.parametrize(("minutes", "times"), [(5, 1), (50, 2), (120, 4)])
def test_every_fault_comes_as_often_as_the_run_allows_before_the_quiet_tail(minutes: int, times: int) -> None:
    seconds = minutes * 60
    tail = max(90, seconds / 10)
    faults = plan(
        seconds, Durations(30, 30, min(180, seconds / 5)), workers=3, warm_up=min(300, seconds / 5), tail=tail
    )
    assert Counter(f.kind for f in faults) == dict.fromkeys(PROCESS_FAULTS + SITE_FAULTS, times)
    assert all(f.end <= seconds - tail + 60 for f in faults)
    for track in (PROCESS_FAULTS, SITE_FAULTS):
        ordered = [f for f in faults if f.kind in track]
        assert all(b.start >= a.end for a, b in zip(ordered, ordered[1:])), "faults of one track overlap"
    assert {f.target for f in faults if f.kind == "worker_killed"} <= {0, 1, 2}


def test_a_stop_outlasts_the_leases_and_an_outage_the_connect_timeout() -> None:
    assert DURATIONS.of("worker_stopped") > DURATIONS.lease
    assert DURATIONS.of("postgres_unreachable") > DURATIONS.connect_timeout


def test_a_gap_short_at_the_server_is_a_violation_only_if_short_at_the_crawler() -> None:
    check = SpacingCheck(lambda host: 1.0)
    (pair,) = check.feed([served("h", 10.0), served("g", 10.2), served("h", 10.6), served("h", 11.7)])
    assert (pair.first.start, pair.second.start, check.gaps) == (10.0, 10.6, 2)
    assert judge_gap(pair, Stamp(9.5, None), Stamp(10.55, None)) == "late_read"  # the first was read late
    assert judge_gap(pair, Stamp(9.99, None), Stamp(10.59, None)) == "violation"


def test_a_request_after_a_429_is_a_violation_only_when_it_left_after_the_crawler_read_the_429() -> None:
    check = BlockCheck(5.0, frozenset({"h"}))
    (pair,) = check.feed([served("h", 10.0, 429, end=10.1), served("h", 12.0), served("g", 12.0, 429)])
    assert (pair.second.start, check.answers) == (12.0, 1)
    assert judge_hit(pair, Stamp(9.9, 10.2), Stamp(10.1, None)) == "in_flight"
    assert judge_hit(pair, Stamp(9.9, 10.2), Stamp(11.9, None)) == "violation"
    assert check.feed([served("h", 15.2)]) == []


def test_a_page_sent_whole_twice_within_the_interval_is_a_duplicate() -> None:
    check = DuplicateCheck(interval=100.0)
    incomplete = SoakRequest(served("h", 20.0).served, complete=False)
    found = check.feed(
        [served("h", 10.0), incomplete, served("h", 30.0, 503), served("h", 40.0, 304), served("h", 200.0)]
    )
    assert [(p.first.start, p.second.start) for p in found] == [(10.0, 40.0)]
    assert check.fetched() == {("h", "/a.html")} and check.fetches == 3


def test_slope_and_percentile() -> None:
    assert slope_per_hour([(0, 100), (1800, 101), (3600, 102)]) == pytest.approx(2.0)
    assert slope_per_hour([(0, 1), (60, 1)]) is None
    assert percentile([float(n) for n in range(1, 101)], 0.95) == 95.0

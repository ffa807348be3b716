"""The politeness audit of one site from the request log, case by case (times in seconds)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from crawler.control.site_audit import MAX_LISTED, LoggedRequest, max_in_flight, robots_summary, seconds, summarize

T0 = 1_700_000_000.0


def _row(
    start: float,
    end: float | None = None,
    status: int | None = 200,
    delay: float | None = 1.0,
    url: str = "",
    outcome: str = "response",
) -> dict:
    return {
        "url": url or f"http://a.example/{start}",
        "started_at": T0 + start,
        "ended_at": None if end is None else T0 + end,
        "http_status": status,
        "outcome": outcome,
        "delay_in_force": delay,
    }


def _iso(offset: float) -> str:
    return datetime.fromtimestamp(T0 + offset, UTC).isoformat()


def test_nothing_logged() -> None:
    summary = summarize([], 0.01)
    assert summary == {
        "requests": 0,
        "first_start": None,
        "last_start": None,
        "outcomes": {},
        "smallest_gap": None,
        "delay_tolerance": 0.01,
        "gaps_under_delay": 0,
        "gaps_under_delay_listed": [],
        "max_in_flight": 0,
        "max_in_flight_at": None,
        "responses_429": 0,
        "responses_429_listed": [],
        "robots": [],
    }


def test_one_request() -> None:
    summary = summarize([_row(0, 0.5)], 0.01)
    assert (summary["requests"], summary["first_start"], summary["last_start"]) == (1, _iso(0), _iso(0))
    assert summary["smallest_gap"] is None and summary["max_in_flight"] == 1 and summary["max_in_flight_at"] == _iso(0)


def test_the_smallest_gap_against_the_delay_in_force_of_the_first_of_the_two() -> None:
    rows = [_row(3.0, 3.1, delay=2.0, url="c"), _row(0, 0.1, url="a"), _row(1.5, 1.6, url="b")]  # not in order
    summary = summarize(rows, 0.01)
    assert summary["smallest_gap"] == {
        "seconds": 1.5,
        "delay_in_force": 1.0,
        "at": _iso(1.5),
        "after": "a",
        "before": "b",
    }
    assert summary["gaps_under_delay"] == 0
    assert summary["first_start"] == _iso(0) and summary["last_start"] == _iso(3.0)


@pytest.mark.parametrize(
    ("gap", "tolerance", "violations"),
    [(0.995, 0.01, 0), (0.99, 0.01, 0), (0.989, 0.01, 1), (0.5, 0.0, 1), (1.0, 0.0, 0)],
)
def test_gaps_shorter_than_the_delay_beyond_the_tolerance(gap: float, tolerance: float, violations: int) -> None:
    summary = summarize([_row(0, 0.1), _row(gap, gap + 0.1)], tolerance)
    assert summary["gaps_under_delay"] == violations
    assert len(summary["gaps_under_delay_listed"]) == violations


def test_a_gap_after_a_request_of_unknown_delay_is_no_violation() -> None:
    summary = summarize([_row(0, 0.1, delay=None), _row(0.1, 0.2)], 0.01)
    assert summary["gaps_under_delay"] == 0 and summary["smallest_gap"]["delay_in_force"] is None


def test_violations_are_counted_all_and_listed_up_to_a_limit() -> None:
    rows = [_row(i * 0.1, i * 0.1 + 0.05) for i in range(MAX_LISTED + 6)]
    summary = summarize(rows, 0.01)
    assert summary["gaps_under_delay"] == MAX_LISTED + 5
    assert len(summary["gaps_under_delay_listed"]) == MAX_LISTED


def test_most_in_flight_at_once() -> None:
    rows = [_row(0, 10), _row(1, 2), _row(2, 3), _row(2.5, 4), _row(5, 6)]
    summary = summarize(rows, 0.01)
    assert (summary["max_in_flight"], summary["max_in_flight_at"]) == (3, _iso(2.5))


def test_one_ending_as_another_starts_does_not_overlap_it() -> None:
    requests = [LoggedRequest("a", 0, 1, 200, "", None), LoggedRequest("b", 1, 2, 200, "", None)]
    assert max_in_flight(requests) == (1, 0)


def test_a_request_without_an_end_stays_in_flight() -> None:
    requests = [LoggedRequest("a", 0, None, None, "", None), LoggedRequest("b", 5, 6, 200, "", None)]
    assert max_in_flight(requests) == (2, 5)


def test_each_429_with_how_long_the_crawler_waited_after_it() -> None:
    rows = [_row(0, 0.2, status=429, url="first"), _row(0.1, 0.3), _row(1.2, 1.3), _row(5, 5.1, status=429, url="last")]
    summary = summarize(rows, 0.01)
    assert summary["responses_429"] == 2
    first, last = summary["responses_429_listed"]
    assert first["url"] == "first" and first["at"] == _iso(0.2) and first["waited"] == pytest.approx(1.0)
    assert last == {"url": "last", "at": _iso(5.1), "waited": None}
    assert summary["outcomes"] == {"200": 2, "429": 2}


def test_errors_count_by_their_outcome() -> None:
    rows = [
        _row(0, 30, status=None, outcome="TimeoutError"),
        _row(1, 2, status=503),
        _row(3, 3.1, status=None, outcome="TimeoutError"),
    ]
    assert summarize(rows, 0.01)["outcomes"] == {"503": 1, "TimeoutError": 2}


def test_times_as_both_backends_and_clocks_give_them() -> None:
    aware = datetime.fromtimestamp(T0, UTC)
    assert seconds(aware) == T0
    assert seconds(aware.isoformat()) == T0
    assert seconds(aware.replace(tzinfo=None).isoformat()) == T0  # naive text is UTC
    assert seconds(T0) == T0 and seconds(int(T0)) == T0
    rows = [
        {**_row(0, 0.1), "started_at": aware, "ended_at": aware + timedelta(seconds=0.1)},
        {**_row(2, 2.1), "started_at": (aware + timedelta(seconds=2)).isoformat(), "ended_at": None},
    ]
    assert summarize(rows, 0.01)["smallest_gap"]["seconds"] == pytest.approx(2.0)


def test_robots_decisions_grouped_by_rule() -> None:
    decisions = [
        {"url": "http://a.example/private/1", "allowed": False, "matched_rule": "Disallow: /private"},
        {"url": "http://a.example/1", "allowed": True, "matched_rule": "no rule matched"},
        {"url": "http://a.example/private/2", "allowed": 0, "matched_rule": "Disallow: /private"},
        {"url": "http://a.example/2", "allowed": 1, "matched_rule": "no rule matched"},
        {"url": "http://a.example/x", "allowed": False, "matched_rule": None},
    ]
    assert robots_summary(decisions) == [
        {"allowed": True, "rule": "no rule matched", "decisions": 2, "example": "http://a.example/1"},
        {"allowed": False, "rule": "Disallow: /private", "decisions": 2, "example": "http://a.example/private/1"},
        {"allowed": False, "rule": None, "decisions": 1, "example": "http://a.example/x"},
    ]
    assert summarize([], 0.01, decisions)["robots"] == robots_summary(decisions)

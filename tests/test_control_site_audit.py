"""The politeness audit of one site from the request log, case by case (times in seconds)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from crawler.control.site_audit import (
    MAX_LISTED,
    Gap,
    LoggedRequest,
    gaps_between,
    in_start_order,
    max_in_flight,
    robots_summary,
    seconds,
    summarize,
)

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


def test_the_smallest_gap_against_the_delay_in_force_of_the_second_of_the_two() -> None:
    rows = [
        _row(3.5, 3.6, delay=2.0, url="c"),
        _row(0, 0.1, delay=3.0, url="a"),
        _row(1.5, 1.6, url="b"),
    ]  # not in order
    summary = summarize(rows, 0.01)
    assert summary["smallest_gap"] == {
        "seconds": 1.5,
        "delay_in_force": 1.0,
        "at": _iso(1.5),
        "after": "a",
        "before": "b",
    }
    assert summary["gaps_under_delay"] == 0
    assert summary["first_start"] == _iso(0) and summary["last_start"] == _iso(3.5)


def _short_gaps(*requests: tuple[float, float | None], tolerance: float = 0.01) -> list[tuple[float, float]]:
    """(start, delay in force) of each request in; (start of the second, its delay) of each short gap out."""
    rows = [_row(start, start + 0.05, delay=delay) for start, delay in requests]
    listed = summarize(rows, tolerance)["gaps_under_delay_listed"]
    return [(float(g["before"].rpartition("/")[2]), g["delay_in_force"]) for g in listed]


def test_a_gap_is_judged_against_the_delay_in_force_when_its_second_request_left() -> None:
    # robots.txt left at the default 1 s; it said 0.5 s, which the pages kept
    assert _short_gaps((0, 1.0), (1.0, 0.5), (1.5, 0.5), (2.0, 0.5)) == []
    # a delay that fell lets the next request go sooner: the gap after the 1 s request is judged at 0.5 s
    assert _short_gaps((0, 0.5), (0.5, 1.0), (1.0, 0.5)) == [(0.5, 1.0)]
    # a delay that rose (a 429 learned from) holds the next request longer
    assert _short_gaps((0, 0.5), (0.5, 0.5), (1.0, 2.0), (3.0, 2.0)) == [(1.0, 2.0)]


@pytest.mark.parametrize(
    ("gap", "delay", "tolerance", "short"),
    [
        (0.995, 1.0, 0.01, False),
        (0.99, 1.0, 0.01, False),  # exactly the delay less the tolerance
        (0.990001, 1.0, 0.01, False),
        (0.989999, 1.0, 0.01, True),  # a microsecond less
        (0.5, 1.0, 0.01, True),
        (1.0, 1.0, 0.0, False),
        (0.999999, 1.0, 0.0, True),
        (2.5, 1.0, 0.0, False),
        (0.0, 0.5, 0.01, True),  # two starts in the same microsecond
        (0.0, 0.0, 0.0, False),  # no delay: nothing is too soon
        (0.0, 0.005, 0.01, False),  # a tolerance longer than the delay
        (0.3, 0.1 + 0.2, 0.0, False),  # 0.30000000000000004 s: whole microseconds, not floating point
        (0.7, 0.8, 0.1, False),  # 0.8 - 0.1 is 0.7000000000000001 in floating point
        (0.699999, 0.8, 0.1, True),
    ],
)
def test_a_gap_is_short_when_under_its_delay_by_more_than_the_tolerance(
    gap: float, delay: float, tolerance: float, short: bool
) -> None:
    summary = summarize([_row(0, 0.01, delay=delay), _row(gap, gap + 0.01, delay=delay)], tolerance)
    assert summary["gaps_under_delay"] == int(short)
    assert len(summary["gaps_under_delay_listed"]) == int(short)
    assert summary["smallest_gap"]["seconds"] == gap


def test_times_far_from_zero_keep_their_microseconds() -> None:
    start = 1_761_234_567.123456  # floating point holds about a quarter of a microsecond here
    early = LoggedRequest("a", start, None, 200, "", 1.0)
    for micros, short in ((989_999, True), (990_000, False)):
        later = LoggedRequest("b", start + micros / 1e6, None, 200, "", 1.0)
        assert Gap(early, later).micros == micros and Gap(early, later).short(0.01) is short


def test_a_gap_ending_at_a_request_of_unknown_delay_is_not_judged() -> None:
    assert _short_gaps((0, 1.0), (0.1, None)) == []
    assert _short_gaps((0, None), (0.1, 1.0)) == [(0.1, 1.0)]  # one after it is
    summary = summarize([_row(0, 0.1), _row(0.1, 0.2, delay=None)], 0.01)
    assert summary["smallest_gap"]["delay_in_force"] is None


def test_the_first_request_of_the_window_is_not_judged() -> None:
    assert _short_gaps((5.0, 60.0)) == []
    assert _short_gaps((5.0, 60.0), (6.0, 0.5)) == []


def test_requests_of_the_same_start_are_taken_in_the_order_of_their_urls() -> None:
    rows = [_row(1.0, delay=None, url="b"), _row(1.0, delay=0.5, url="a"), _row(0, delay=0.5, url="first")]
    listed = [(g["after"], g["before"]) for g in summarize(rows, 0.01)["gaps_under_delay_listed"]]
    assert listed == []  # first -> a at 1 s; a -> b, 0 s, but b's delay is unknown
    rows = [_row(1.0, delay=0.5, url="b"), _row(1.0, delay=None, url="a"), _row(0, delay=0.5, url="first")]
    listed = [(g["after"], g["before"]) for g in summarize(rows, 0.01)["gaps_under_delay_listed"]]
    assert listed == [("a", "b")]


def test_in_start_order_and_the_gaps_between() -> None:
    requests = in_start_order([_row(2.0, url="c"), _row(0, url="a"), _row(0.5, url="b")])
    assert [r.url for r in requests] == ["a", "b", "c"]
    gaps = gaps_between(requests)
    assert [(g.after.url, g.before.url, g.seconds, g.delay) for g in gaps] == [
        ("a", "b", 0.5, 1.0),
        ("b", "c", 1.5, 1.0),
    ]
    assert gaps_between(requests[:1]) == [] and gaps_between([]) == []


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

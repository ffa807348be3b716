"""Crawl-wide figures from worker samples (pure): rates by difference over the seconds the
samples cover, sums over processes, status mix, frontier size, the charts' aligned intervals and
stable scale, and seed 002's three alerts at their thresholds."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from crawler.api.figures import (
    Point,
    Sample,
    alerts,
    chart,
    frontier_size,
    is_live,
    nice_ceiling,
    numeric,
    series,
    success_rate,
    totals,
)
from crawler.api.overview import mark_liveness

S200, S429, S503 = (f"downloader/response_status_count/{s}" for s in (200, 429, 503))


def _beats(worker: str, start: float, beats: int, every: float = 5.0, pages: int = 10) -> list[Sample]:
    return [
        Sample(worker, start + n * every, {"response_received_count": pages * n, S200: pages * n})
        for n in range(beats + 1)
    ]


def test_rates_are_differences_summed_over_processes() -> None:
    samples = _beats("a", 0.0, 24) + _beats("b", 0.0, 24, pages=20)
    points = series(samples, 0.0, 120.0, 60.0)
    assert [p.at for p in points] == [60.0, 120.0]
    assert [p.pages for p in points] == [120 + 240, 120 + 240]
    assert points[0].pages_per_second == pytest.approx(6.0)
    assert points[0].statuses == {"200": 360}


def test_a_process_that_starts_late_counts_from_its_first_sample() -> None:
    samples = _beats("a", 0.0, 24) + [
        Sample("late", 70.0, {"response_received_count": 50}),
        Sample("late", 110.0, {"response_received_count": 90}),
    ]
    first, second = series(samples, 0.0, 120.0, 60.0)
    assert first.pages == 120 and second.pages == 120 + 40


def test_intervals_without_samples_are_empty_and_bad_ranges_give_nothing() -> None:
    assert series([], 0.0, 60.0, 10.0)[0] == Point(10.0, 10.0, 0.0, 0.0, {}, None)
    assert series(_beats("a", 0.0, 2), 10.0, 0.0, 5.0) == []
    assert series(_beats("a", 0.0, 2), 0.0, 10.0, 0.0) == []


def test_frontier_size_is_scheduled_minus_handed_out_in_either_scheduler() -> None:
    assert frontier_size({"scheduler/enqueued": 30.0, "scheduler/dequeued": 12.0}) == 18.0
    assert frontier_size({"scheduler/enqueued/redis": 5.0, "scheduler/dequeued/redis": 1.0}) == 4.0
    assert frontier_size({}) == 0.0


def test_numeric_keeps_numbers_only_and_totals_add_up() -> None:
    assert numeric({"a": 1, "b": 2.5, "c": "x", "d": True, "e": None}) == {"a": 1.0, "b": 2.5}
    assert totals([{"a": 1.0}, {"a": 2.0, "b": 1.0}]) == {"a": 3.0, "b": 1.0}


@pytest.mark.parametrize(
    ("state", "age", "live"),
    [
        ("running", 0, True),
        ("paused", 120, True),
        ("running", 121, False),
        ("finished", 0, False),
        ("closing", 5, True),
    ],
)
def test_a_worker_is_live_while_running_and_heard_from(state: str, age: float, live: bool) -> None:
    assert is_live(state, 1000.0 - age, 1000.0, 120.0) is live


def _minutes(error_shares: list[float], frontier: list[float] | None = None) -> list[Point]:
    points = []
    for n, share in enumerate(error_shares):
        errors = round(100 * share)
        points.append(
            Point(
                60.0 * (n + 1),
                60.0,
                100.0,
                100.0 / 60.0,
                {"200": 100.0 - errors, "503": float(errors)},
                frontier[n] if frontier else None,
            )
        )
    return points


def test_high_error_rate_needs_over_20_percent_in_each_of_five_minutes() -> None:
    assert [a.name for a in alerts(_minutes([0.21] * 5), [], 120.0)] == ["high_error_rate"]
    assert alerts(_minutes([0.20] * 5), [], 120.0) == []  # over 20%, not at it
    assert alerts(_minutes([0.5] * 4), [], 120.0) == []  # four minutes are not five
    assert alerts(_minutes([0.5, 0.5, 0.1, 0.5, 0.5]), [], 120.0) == []
    assert (
        alerts(_minutes([0.0, 0.5, 0.5, 0.5, 0.5, 0.5]), [], 120.0)[0].name == "high_error_rate"
    )  # the last five count


def test_frontier_backlog_fires_past_10_percent_growth_in_a_minute() -> None:
    assert [a.name for a in alerts(_minutes([0.0, 0.0], [1000.0, 1101.0]), [], 120.0)] == ["frontier_backlog"]
    assert alerts(_minutes([0.0, 0.0], [1000.0, 1100.0]), [], 120.0) == []
    assert alerts(_minutes([0.0, 0.0], [0.0, 50.0]), [], 120.0) == []  # from empty: no ratio
    assert alerts(_minutes([0.0], [10.0]), [], 120.0) == []


def test_a_silent_worker_is_a_worker_crash() -> None:
    found = alerts([], ["w-1", "w-2"], 120.0)
    assert [a.name for a in found] == ["worker_crash", "worker_crash"]
    assert "w-2" in found[1].message and "120 s" in found[1].message


def test_a_silent_worker_is_a_crash_until_a_process_of_its_crawl_starts_after_it() -> None:
    def row(worker: str, crawl: str | None, started: float, heard: float) -> dict[str, object]:
        stamp = {"started_at": started, "heartbeat_at": heard}
        return {"worker_id": worker, "crawl_id": crawl, "state": "running", "stats": {}} | {
            name: datetime.fromtimestamp(at, UTC).isoformat() for name, at in stamp.items()
        }

    killed = row("killed", "c", 0.0, 100.0)
    alongside = row("alongside", "c", 50.0, 995.0)  # started before the other fell silent
    lonely = row("lonely", "d", 0.0, 100.0)
    unnamed = row("unnamed", None, 0.0, 100.0)
    assert mark_liveness([killed, alongside, lonely, unnamed], now=1000.0, timeout=120.0) == [
        "killed",
        "lonely",
        "unnamed",
    ]
    assert alongside["live"] and not killed["live"]
    started_again = row("started-again", "c", 400.0, 995.0)
    assert mark_liveness([killed, alongside, started_again, lonely], now=1000.0, timeout=120.0) == ["lonely"]


def _steady(worker: str, first: float, last: float, per_second: float, every: float = 5.0) -> list[Sample]:
    """A process's samples every ``every`` seconds from ``first`` to ``last``, fetching ``per_second``."""
    count = int((last - first) // every)
    return [
        Sample(worker, first + n * every, {"response_received_count": per_second * n * every}) for n in range(count + 1)
    ]


def test_a_crawl_younger_than_the_interval_is_not_divided_by_the_whole_interval() -> None:
    # 25 s of samples at 2 pages/s in the minute up to 100, the latest heartbeat 5 s old.
    (point,) = series(_steady("a", 70.0, 95.0, 2.0), 40.0, 100.0, 60.0)
    assert point.pages == 50
    assert point.pages_per_second == pytest.approx(2.0)


def test_processes_add_their_rates_each_over_the_seconds_its_samples_cover() -> None:
    samples = _steady("a", 1.0, 96.0, 3.0) + _steady("b", 3.0, 98.0, 1.0)
    (point,) = series(samples, 40.0, 100.0, 60.0)
    assert point.pages_per_second == pytest.approx(4.0)


def test_a_process_that_stopped_counts_its_silence_to_the_end_of_the_interval() -> None:
    finished = _steady("a", 40.0, 70.0, 2.0)
    assert series(finished, 40.0, 100.0, 60.0, stopped={"a"})[0].pages_per_second == pytest.approx(1.0)
    assert series(finished, 40.0, 100.0, 60.0)[0].pages_per_second == pytest.approx(2.0)  # still running
    assert series(finished, 100.0, 160.0, 60.0, stopped={"a"})[0].pages_per_second == 0.0
    before_its_end = series(finished, 42.0, 62.0, 10.0, stopped={"a"})  # it sent samples after these
    assert [p.pages_per_second for p in before_its_end] == pytest.approx([2.0, 2.0])


def test_chart_intervals_are_aligned_and_hold_their_figures_and_scale_from_one_refresh_to_the_next() -> None:
    # Two processes whose rates wander between 2.6 and 3.4 pages/s; refreshes every 4 s see
    # the samples written up to then.
    samples = []
    for worker, phase, rates in (("a", 1.0, (1.2, 1.6, 1.4)), ("b", 3.5, (1.4, 1.8, 1.6))):
        pages = 0.0
        for n in range(300):
            pages += 5.0 * rates[n % 3]
            samples.append(Sample(worker, 1000.0 + phase + 5.0 * n, {"response_received_count": pages}))
    charts = {}
    for now in range(1902, 1962, 4):
        charts[now] = chart([s for s in samples if s.at <= now], float(now), 600.0, 20.0)
    assert [p.at for p in charts[1902].points][-2:] == [1880.0, 1900.0]  # no interval still under way
    assert {c.pages_per_second_scale for c in charts.values()} == {5.0}
    by_end = {}
    for found in charts.values():
        for point in found.points:
            assert by_end.setdefault(point.at, point) == point, f"the interval ending at {point.at} changed"
    assert all(2.6 <= p.pages_per_second <= 3.4 for p in by_end.values())


@pytest.mark.parametrize(
    ("value", "ceiling"),
    [(0.0, 1.0), (0.05, 0.05), (0.17, 0.2), (0.4, 0.5), (0.95, 1.0), (1.2, 2.0), (2.0, 2.0), (7.5, 10.0), (120, 200)],
)
def test_the_scale_is_a_nice_ceiling(value: float, ceiling: float) -> None:
    assert nice_ceiling(value) == ceiling


def test_success_is_the_share_of_responses_that_are_not_errors_over_five_minutes() -> None:
    assert success_rate(_minutes([0.5, 0.0, 0.0, 0.0, 0.0, 0.1])) == pytest.approx(0.98)
    assert success_rate([]) is None

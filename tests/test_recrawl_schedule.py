"""The adaptive revisit schedule, rule by rule, with a fake clock."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.recrawl.schedule import (
    CHANGEFREQ_SECONDS,
    ESTIMATE_AFTER_REVISITS,
    History,
    Revisit,
    RevisitPolicy,
    RevisitSchedule,
    change_rate,
)
from tests.helpers import FakeClock

HOUR, DAY = 3600.0, 86_400.0
POLICY = RevisitPolicy(min_interval=HOUR, max_interval=30 * DAY, initial_interval=DAY)


def schedule(policy: RevisitPolicy = POLICY, now: float = 1_000_000.0) -> tuple[RevisitSchedule, FakeClock]:
    clock = FakeClock(now)
    return RevisitSchedule(policy, clock), clock


def test_a_first_fetch_gets_the_initial_interval() -> None:
    revisits, clock = schedule()
    assert revisits.first_visit() == Revisit(DAY, clock.now + DAY, 0, 0)
    assert revisits.after_visit(None, changed=True) == Revisit(DAY, clock.now + DAY, 0, 0)
    assert revisits.after_visit(History(None, 5, 2), changed=False) == Revisit(DAY, clock.now + DAY, 0, 0)


@pytest.mark.parametrize("changefreq", sorted(CHANGEFREQ_SECONDS))
def test_changefreq_is_a_bounded_hint_for_the_first_interval_only(changefreq: str) -> None:
    revisits, clock = schedule()
    expected = min(max(CHANGEFREQ_SECONDS[changefreq], HOUR), 30 * DAY)
    assert revisits.first_visit(changefreq.upper()).interval == expected
    # later visits follow what was observed, whatever the hint says
    later = revisits.after_visit(History(2 * DAY, 1, 0), changed=False, changefreq=changefreq)
    assert later.interval == pytest.approx(2 * DAY * 1.4)


def test_an_unknown_changefreq_is_ignored() -> None:
    revisits, _ = schedule()
    assert revisits.first_visit("fortnightly").interval == DAY


def test_unchanged_grows_by_40_percent_and_changed_shrinks_by_20_percent() -> None:
    revisits, clock = schedule()
    grown = revisits.after_visit(History(DAY, 0, 0), changed=False)
    assert grown == Revisit(pytest.approx(1.4 * DAY), pytest.approx(clock.now + 1.4 * DAY), 1, 0)
    shrunk = revisits.after_visit(History(DAY, 0, 0), changed=True)
    assert shrunk == Revisit(pytest.approx(0.8 * DAY), pytest.approx(clock.now + 0.8 * DAY), 1, 1)


def test_intervals_stay_within_the_bounds() -> None:
    revisits, _ = schedule()
    assert revisits.after_visit(History(29 * DAY, 1, 0), changed=False).interval == 30 * DAY
    assert revisits.after_visit(History(HOUR, 1, 1), changed=True).interval == HOUR
    assert revisits.after_visit(History(1.0, 0, 0), changed=False).interval == HOUR  # below the minimum


def test_a_zero_minimum_still_lets_an_interval_grow_from_zero() -> None:
    revisits, _ = schedule(RevisitPolicy(0.0, DAY, 0.0))
    assert revisits.first_visit().interval == 0.0
    assert revisits.after_visit(History(0.0, 0, 0), changed=False).interval == pytest.approx(1.4)


def test_the_change_rate_estimate_is_cho_and_garcia_molinas() -> None:
    assert change_rate(10, 0, DAY) == 0.0
    assert change_rate(10, 5, DAY) == pytest.approx(-math.log(5.5 / 10.5) / DAY)
    # every visit saw a change: the naive X / n would say exactly one change per interval
    assert change_rate(10, 10, DAY) == pytest.approx(math.log(21) / DAY)
    assert change_rate(0, 0, DAY) is None
    assert change_rate(3, 1, 0.0) is None
    with pytest.raises(ValueError):
        change_rate(3, 4, DAY)


def test_the_estimate_bounds_the_interval_after_enough_revisits() -> None:
    revisits, _ = schedule(RevisitPolicy(HOUR, 365 * DAY, DAY))
    # a page seen changing on 9 of 10 daily visits changes about every 10 h: after one more
    # unchanged visit the interval stays within twice that, not 1.4 days
    history = History(DAY, 9, 9)
    mean_between_changes = 1 / change_rate(10, 9, DAY)
    assert revisits.after_visit(history, changed=False).interval == pytest.approx(2 * mean_between_changes)
    # a page changing once in 10 daily visits: a change does not shrink it below half its mean
    rarely = History(DAY, 9, 0)
    mean_between_changes = 1 / change_rate(10, 1, DAY)
    assert revisits.after_visit(rarely, changed=True).interval == pytest.approx(mean_between_changes / 2)


def test_too_few_revisits_leave_the_interval_to_the_step_alone() -> None:
    revisits, _ = schedule(RevisitPolicy(HOUR, 365 * DAY, DAY))
    history = History(DAY, ESTIMATE_AFTER_REVISITS - 2, ESTIMATE_AFTER_REVISITS - 2)
    assert revisits.after_visit(history, changed=False).interval == pytest.approx(1.4 * DAY)


def test_due_when_the_time_has_come() -> None:
    revisits, clock = schedule()
    assert revisits.is_due(None, None)
    assert revisits.is_due(clock.now, clock.now - DAY)
    assert not revisits.is_due(clock.now + 1, clock.now - DAY)
    clock.now += 1
    assert revisits.is_due(clock.now, clock.now - DAY)


def test_a_newer_sitemap_lastmod_makes_a_page_due_at_once() -> None:
    revisits, clock = schedule()
    last_visit = clock.now - HOUR
    assert revisits.is_due(clock.now + DAY, last_visit, sitemap_lastmod=last_visit + 1)
    assert not revisits.is_due(clock.now + DAY, last_visit, sitemap_lastmod=last_visit)
    assert not revisits.is_due(clock.now + DAY, last_visit, sitemap_lastmod=last_visit - DAY)
    assert not revisits.is_due(clock.now + DAY, None, sitemap_lastmod=clock.now)  # never visited: its own schedule


def test_a_zero_minimum_makes_every_page_due() -> None:
    revisits, clock = schedule(RevisitPolicy(0.0, DAY, DAY))
    assert revisits.is_due(clock.now + DAY, clock.now)


def test_a_lowered_maximum_counts_at_once() -> None:
    revisits, clock = schedule(RevisitPolicy(HOUR, 2 * DAY, DAY))
    # scheduled 20 days ahead under an earlier, larger maximum
    assert revisits.is_due(clock.now + 20 * DAY, clock.now - 2 * DAY)
    assert not revisits.is_due(clock.now + 20 * DAY, clock.now - DAY)


def test_policies_that_make_no_sense_are_refused() -> None:
    with pytest.raises(ValueError, match="minimum"):
        RevisitPolicy(DAY, HOUR, DAY)
    with pytest.raises(ValueError, match="minimum"):
        RevisitPolicy(-1.0, HOUR, DAY)
    with pytest.raises(ValueError, match="shrink"):
        RevisitPolicy(HOUR, DAY, DAY, shrink=1.0)


intervals = st.floats(min_value=0.0, max_value=400 * DAY, allow_nan=False)
counts = st.integers(min_value=0, max_value=1_000)


@settings(deadline=None)  # pure arithmetic: a deadline would only measure the machine's load
@given(
    intervals,
    counts,
    counts,
    st.booleans(),
    st.floats(min_value=0, max_value=10 * DAY),
    st.floats(min_value=10 * DAY, max_value=400 * DAY),
)
def test_every_schedule_stays_within_bounds_and_counts_visits(
    interval: float, revisits_before: int, changes: int, changed: bool, low: float, high: float
) -> None:
    changes = min(changes, revisits_before)
    revisits, clock = schedule(RevisitPolicy(low, high, DAY))
    after = revisits.after_visit(History(interval, revisits_before, changes), changed)
    assert low <= after.interval <= high
    assert after.next_at == clock.now + after.interval
    assert (after.revisits, after.changes) == (revisits_before + 1, changes + int(changed))


@settings(deadline=None)
@given(intervals)
def test_unchanged_never_shortens_and_changed_never_lengthens_before_the_estimate(interval: float) -> None:
    revisits, _ = schedule()
    history = History(interval, 0, 0)
    assert revisits.after_visit(history, changed=False).interval >= POLICY.bounded(interval)
    assert revisits.after_visit(history, changed=True).interval <= POLICY.bounded(max(interval, 1.0))

"""The sliding-window rate limits, with a fake clock: every count up to the limit, every
moment of the window, Retry-After to the second, tiers and clients apart, idle clients forgotten."""

from __future__ import annotations

import math

import pytest

from crawler.api.ratelimit import SlidingWindowLimiter, TieredLimits
from tests.helpers import FakeClock


@pytest.mark.parametrize("limit", [1, 2, 10, 100, 500])
def test_the_limit_passes_and_the_next_is_refused_with_retry_after(limit: int) -> None:
    clock = FakeClock(0.0)
    limiter = SlidingWindowLimiter(limit, 60.0, clock)
    for n in range(limit):
        decision = limiter.hit("client")
        assert decision.allowed and decision.remaining == limit - n - 1 and decision.retry_after == 0
        clock.now += 0.0625  # exact in binary
    refused = limiter.hit("client")
    assert not refused.allowed and refused.remaining == 0
    assert refused.retry_after == math.ceil(60.0 - limit * 0.0625)


@pytest.mark.parametrize("elapsed", [0.0, 0.5, 1.0, 30.0, 59.0, 59.999])
def test_a_refused_client_stays_refused_until_its_oldest_request_leaves_the_window(elapsed: float) -> None:
    clock = FakeClock(100.0)
    limiter = SlidingWindowLimiter(3, 60.0, clock)
    for _ in range(3):
        limiter.hit("c")
    clock.now = 100.0 + elapsed
    decision = limiter.hit("c")
    assert not decision.allowed
    assert decision.retry_after == max(1, math.ceil(60.0 - elapsed))
    clock.now = 160.0
    assert limiter.hit("c").allowed  # the window slid past the three


def test_the_window_slides_request_by_request_not_by_fixed_minutes() -> None:
    clock = FakeClock(0.0)
    limiter = SlidingWindowLimiter(2, 10.0, clock)
    assert limiter.hit("c").allowed  # t=0
    clock.now = 9.0
    assert limiter.hit("c").allowed  # t=9
    clock.now = 9.5
    assert not limiter.hit("c").allowed
    clock.now = 10.0
    assert limiter.hit("c").allowed  # t=0 left; t=9 and t=10 in the window
    clock.now = 18.9
    assert not limiter.hit("c").allowed  # a fixed window would have reset at t=10 and let 2 more in
    clock.now = 19.0
    assert limiter.hit("c").allowed


def test_refused_requests_do_not_count() -> None:
    clock = FakeClock(0.0)
    limiter = SlidingWindowLimiter(1, 60.0, clock)
    limiter.hit("c")
    for second in range(1, 60):
        clock.now = float(second)
        assert not limiter.hit("c").allowed
    clock.now = 60.0
    assert limiter.hit("c").allowed


def test_clients_and_tiers_are_counted_apart() -> None:
    clock = FakeClock(0.0)
    limits = TieredLimits({"anonymous": 10, "user": 100, "admin": 500, "seed": 10}, 60.0, clock)
    for tier, limit in (("anonymous", 10), ("user", 100), ("admin", 500), ("seed", 10)):
        assert all(limits.hit(tier, "a").allowed for _ in range(limit)), tier
        assert not limits.hit(tier, "a").allowed, tier
        assert limits.hit(tier, "b").allowed, tier


def test_idle_clients_are_forgotten_and_busy_ones_kept() -> None:
    clock = FakeClock(0.0)
    limiter = SlidingWindowLimiter(5, 60.0, clock)
    limiter.hit("idle")
    clock.now = 30.0
    limiter.hit("busy")
    clock.now = 60.0
    assert limiter.forget_idle() == 1
    assert len(limiter) == 1
    clock.now = 90.0
    assert limiter.forget_idle() == 1 and len(limiter) == 0


@pytest.mark.parametrize(("limit", "window"), [(0, 60.0), (-1, 60.0), (5, 0.0)])
def test_a_limit_must_be_positive(limit: int, window: float) -> None:
    with pytest.raises(ValueError):
        SlidingWindowLimiter(limit, window, FakeClock())


def test_an_undone_request_frees_its_place_and_only_its_own() -> None:
    clock = FakeClock(0.0)
    limiter = SlidingWindowLimiter(3, 900.0, clock)
    for _ in range(3):
        assert limiter.hit("alice").allowed
        limiter.undo("alice")  # three logins that succeeded: none counts
    for _ in range(3):
        assert limiter.hit("alice").allowed  # three that failed
    assert not limiter.hit("alice").allowed
    limiter.undo("bob")  # nothing of bob's to undo
    assert limiter.hit("bob").allowed
    assert not limiter.hit("alice").allowed
    limiter.undo("alice")
    assert limiter.hit("alice").allowed and not limiter.hit("alice").allowed


def test_attempts_counted_before_they_finish_cannot_all_pass_at_once() -> None:
    # Ten attempts arrive together: each is counted as it comes, before any is known to fail.
    limiter = SlidingWindowLimiter(10, 900.0, FakeClock(0.0))
    decisions = [limiter.hit("alice") for _ in range(25)]
    assert [d.allowed for d in decisions] == [True] * 10 + [False] * 15
    assert {d.retry_after for d in decisions[10:]} == {900}

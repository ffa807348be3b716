"""The adaptive domain policy, rule by rule, with a fake clock (times in seconds)."""

from __future__ import annotations

from email.utils import formatdate

import pytest

from crawler.http.headers import retry_after_seconds
from crawler.politeness.limiter_local import DomainLimiter
from crawler.politeness.limiter_redis import RedisDomainLimiter
from crawler.politeness.policy import Change, DomainState, Policy, PolicyConfig, fibonacci
from tests.helpers import policy_store


def _policy(**config) -> Policy:
    return Policy(PolicyConfig(**config))


# --- effective delay ---------------------------------------------------------------------------


def test_default_delay_when_robots_gives_none() -> None:
    assert _policy().effective_delay(DomainState()) == 1.0
    assert _policy(default_delay=0.25).effective_delay(DomainState()) == 0.25


def test_robots_delay_replaces_the_default_and_is_capped() -> None:
    policy = _policy(default_delay=1.0, robots_delay_cap=60)
    assert policy.effective_delay(DomainState(robots_delay=0.5)) == 0.5
    assert policy.effective_delay(DomainState(robots_delay=5)) == 5
    assert policy.effective_delay(DomainState(robots_delay=3600)) == 60


def test_user_minimum_wins_over_robots_and_default() -> None:
    policy = _policy(min_delay=2.0)
    assert policy.effective_delay(DomainState()) == 2.0
    assert policy.effective_delay(DomainState(robots_delay=0.5)) == 2.0
    assert policy.effective_delay(DomainState(robots_delay=3)) == 3


def test_learned_delay_and_latency_raise_the_delay() -> None:
    policy = _policy(latency_factor=2.0)
    assert policy.effective_delay(DomainState(learned_delay=4)) == 4
    assert policy.effective_delay(DomainState(latency=1.5)) == 3.0
    assert _policy(latency_factor=0).effective_delay(DomainState(latency=9)) == 1.0


def test_latency_is_smoothed_and_never_lowers_robots_or_minimum() -> None:
    policy = _policy(latency_factor=1.0, latency_smoothing=0.5, min_delay=0.5)
    state = DomainState(robots_delay=2.0)
    policy.on_success(state, 0, latency=1.0)
    assert state.latency == 1.0
    policy.on_success(state, 0, latency=3.0)
    assert state.latency == 2.0
    assert policy.effective_delay(state) == 2.0
    policy.on_success(state, 0, latency=5.0)
    assert policy.effective_delay(state) == 3.5
    for _ in range(30):
        policy.on_success(state, 0, latency=0.01)
    assert policy.effective_delay(state) == 2.0


# --- slots and concurrency ---------------------------------------------------------------------


def test_slots_are_spaced_by_the_effective_delay() -> None:
    policy = _policy(default_delay=1.0, base_concurrency=5)
    state = DomainState()
    assert policy.can_start(state, 0.0)
    policy.start(state, 0.0)
    policy.sent(state, 0.0)
    assert not policy.can_start(state, 0.999)
    assert policy.can_start(state, 1.0)
    policy.start(state, 1.0)
    policy.sent(state, 1.0)
    assert policy.ready_at(state) == 2.0


def test_concurrency_limits_starts() -> None:
    policy = _policy(default_delay=0.0, base_concurrency=2)
    state = DomainState()
    policy.start(state, 0)
    policy.start(state, 0)
    assert not policy.can_start(state, 10)
    policy.finish(state)
    assert policy.can_start(state, 10)
    policy.finish(state)
    policy.finish(state)
    assert state.inflight == 0


@pytest.mark.parametrize(
    ("learned", "expected"),
    [(0, 4), (1, 4), (5.9, 4), (6.0, 3), (10.9, 3), (11, 2), (16, 1), (60, 1)],
)
def test_concurrency_drops_one_per_five_seconds_above_baseline(learned: float, expected: int) -> None:
    assert _policy(base_concurrency=4, default_delay=1.0).concurrency(DomainState(learned_delay=learned)) == expected


# --- 429 ----------------------------------------------------------------------------------------


def test_fibonacci() -> None:
    assert [fibonacci(n) for n in range(1, 10)] == [1, 1, 2, 3, 5, 8, 13, 21, 34]


def test_429_blocks_with_fibonacci_backoff_and_grows_the_delay_a_second_each() -> None:
    policy = _policy(default_delay=1.0)
    state = DomainState()
    blocks, delays = [], []
    for n in range(6):
        outcome = policy.on_blocked(state, 100.0 * n)
        blocks.append(outcome.block)
        delays.append(policy.effective_delay(state))
        assert state.blocked_until == 100.0 * n + outcome.block
        assert outcome.change is Change.INCREASED
    assert blocks == [1, 1, 2, 3, 5, 8]
    assert delays == [2, 3, 4, 5, 6, 7]


def test_retry_after_wins_and_blocks_are_capped() -> None:
    policy = _policy(block_cap=600)
    state = DomainState()
    assert policy.on_blocked(state, 0, retry_after=7).block == 7
    assert state.blocked_until == 7
    assert policy.on_blocked(state, 0, retry_after=10_000).block == 600
    assert not policy.can_start(state, 599.9) and policy.can_start(state, 600)


def test_a_block_never_shortens_an_earlier_one() -> None:
    policy = _policy()
    state = DomainState()
    policy.on_blocked(state, 0, retry_after=30)
    policy.on_blocked(state, 1, retry_after=2)
    assert state.blocked_until == 30


def test_learned_delay_is_capped() -> None:
    policy = _policy(max_delay=60)
    state = DomainState(learned_delay=59.5)
    policy.on_blocked(state, 0)
    assert state.learned_delay == 60
    policy.on_blocked(state, 0)
    assert state.learned_delay == 60


def test_sub_second_delays_grow_proportionally() -> None:
    policy = _policy(default_delay=0.2, step_fraction=0.25, min_step=0.01)
    state = DomainState()
    policy.on_blocked(state, 0)
    assert state.learned_delay == pytest.approx(0.25)
    policy.on_blocked(state, 0)
    assert state.learned_delay == pytest.approx(0.3125)
    big = DomainState(learned_delay=8)
    policy.on_blocked(big, 0)
    assert big.learned_delay == 9  # seconds-long delays step by one second


def test_zero_delay_grows_by_the_minimum_step() -> None:
    policy = _policy(default_delay=0.0, min_step=0.05)
    state = DomainState()
    policy.on_blocked(state, 0)
    assert state.learned_delay == 0.05


def test_success_of_a_request_sent_after_the_block_clears_it_and_the_streak_at_once() -> None:
    policy = _policy()
    state = DomainState()
    policy.on_blocked(state, 0)
    policy.on_blocked(state, 0.1)
    assert state.blocking_streak == 2 and state.blocked_until == 1.1
    policy.on_success(state, 0.5, sent_at=0.3)  # it left after the last 429 was read
    assert state.blocked_until == 0 and state.blocking_streak == 0
    assert policy.on_blocked(state, 1).block == 1  # the backoff starts again at the beginning


def test_success_of_a_request_on_its_way_when_the_block_came_leaves_the_block() -> None:
    policy = _policy()
    state = DomainState()
    policy.on_blocked(state, 10.0, retry_after=5)
    policy.on_success(state, 10.2, sent_at=9.9)  # written before the 429 was read, answered after
    assert state.blocked_until == 15.0 and state.blocking_streak == 1
    policy.on_blocked(state, 11)  # the streak went on: its backoff grows, the longer block stands
    assert state.blocking_streak == 2 and state.blocked_until == 15.0


def test_a_refusal_of_a_request_on_its_way_when_the_block_came_is_not_learned_twice() -> None:
    policy = _policy()
    state = DomainState()
    policy.on_blocked(state, 10.0)
    delay, until = state.learned_delay, state.blocked_until
    again = policy.on_blocked(state, 10.2, sent_at=9.9)  # written before the 429 was read, refused after
    assert (state.blocking_streak, state.learned_delay, state.blocked_until) == (1, delay, until)
    assert again.again and again.change is Change.NONE and again.block == 0 and not again.pacing_changed
    longer = policy.on_blocked(state, 10.3, retry_after=5, sent_at=9.8)  # its own Retry-After holds longer
    assert state.blocked_until == 15.3 and longer.again and longer.block == pytest.approx(5.0)
    assert longer.change is Change.NONE and longer.delay_before == longer.delay_after == delay
    assert (state.blocking_streak, state.learned_delay, state.blocked_at) == (1, delay, 10.3)
    shorter = policy.on_blocked(state, 10.4, retry_after=1, sent_at=9.8)  # a shorter one does not shorten it
    assert (state.blocked_until, state.blocked_at) == (15.3, 10.3) and shorter.again and shorter.block == 0
    policy.on_success(state, 10.5, sent_at=10.1)  # left after the first 429, before the longer one
    assert state.blocked_until == 15.3
    new = policy.on_blocked(state, 16.0, sent_at=15.5)  # left after the block was read: refused anew
    assert state.blocking_streak == 2 and state.learned_delay > delay and new.change is Change.INCREASED
    assert not new.again and new.block > 0
    assert policy.on_blocked(state, 16.1).change is Change.INCREASED  # departure unknown: as before


def test_success_of_a_request_whose_departure_is_unknown_clears_a_block_only_once_it_is_over() -> None:
    policy = _policy()
    state = DomainState()
    policy.on_blocked(state, 10.0, retry_after=5)
    policy.on_success(state, 14.9)
    assert state.blocked_until == 15.0 and state.blocking_streak == 1
    policy.on_success(state, 15.0)
    assert state.blocked_until == 0 and state.blocking_streak == 0


# --- probing down --------------------------------------------------------------------------------


def test_probe_after_twenty_successes_one_step_down() -> None:
    policy = _policy(default_delay=1.0, probe_after=20)
    state = DomainState(learned_delay=5.0)
    for _ in range(19):
        assert policy.on_success(state, 0).change is Change.NONE
    outcome = policy.on_success(state, 0)
    assert outcome.change is Change.PROBED and state.learned_delay == 4.0
    assert (outcome.delay_before, outcome.delay_after) == (5.0, 4.0)


def test_probe_never_goes_below_floor_robots_or_minimum() -> None:
    for state, expected in [
        (DomainState(learned_delay=3.0, floor=2.5), 2.5),
        (DomainState(learned_delay=3.0, robots_delay=2.8), 2.8),
        (DomainState(learned_delay=1.02), 1.0),
    ]:
        policy = _policy(default_delay=1.0, probe_after=1)
        policy.on_success(state, 0)
        assert state.learned_delay == expected
    at_floor = DomainState(learned_delay=2.0, floor=2.0)
    assert _policy(probe_after=1).on_success(at_floor, 0).change is Change.NONE


def test_429_right_after_a_probe_reverts_and_records_the_floor() -> None:
    policy = _policy(default_delay=1.0, probe_after=20)
    state = DomainState(learned_delay=5.0)
    for _ in range(20):
        policy.on_success(state, 0)
    assert state.learned_delay == 4.0
    outcome = policy.on_blocked(state, 0)
    assert outcome.change is Change.REVERTED
    assert state.learned_delay == 5.0 and state.floor == 5.0
    for _ in range(40):
        policy.on_success(state, 0)
    assert state.learned_delay == 5.0  # never probes below the floor


def test_a_probe_that_holds_for_a_whole_run_is_kept() -> None:
    policy = _policy(default_delay=1.0, probe_after=20)
    state = DomainState(learned_delay=5.0)
    for _ in range(40):
        policy.on_success(state, 0)
    assert state.learned_delay == 3.0 and state.probe_from == 4.0
    policy.on_blocked(state, 0)
    assert state.learned_delay == 4.0 and state.floor == 4.0


@pytest.mark.parametrize(("floor", "raised"), [(0.25, 0.2625), (1.5, 1.575), (4.0, 5.0)])
def test_a_429_at_the_floor_raises_delay_and_floor_one_fine_step(floor: float, raised: float) -> None:
    """The floor held for a whole run of successes, so the limit lies just above it: a coarse
    step would overshoot and then probe back down in 20-success steps."""
    policy = _policy(default_delay=0.05, probe_after=20, probe_fraction=0.05)
    state = DomainState(learned_delay=floor, floor=floor)
    outcome = policy.on_blocked(state, 0)
    assert outcome.change is Change.INCREASED and outcome.block == 1.0
    assert state.learned_delay == pytest.approx(raised) and state.floor == pytest.approx(raised)
    above = DomainState(learned_delay=0.3, floor=0.25)  # above the floor: the coarse step
    policy.on_blocked(above, 0)
    assert above.learned_delay == pytest.approx(0.375) and above.floor == 0.25


def test_short_delays_probe_down_in_small_steps() -> None:
    policy = _policy(default_delay=0.05, probe_after=1, probe_fraction=0.05)
    state = DomainState(learned_delay=0.3125)
    policy.on_success(state, 0)
    assert state.learned_delay == pytest.approx(0.296875)
    long = DomainState(learned_delay=1.5)
    policy.on_success(long, 0)
    assert long.learned_delay == pytest.approx(1.425)


def test_learning_converges_near_a_fast_sites_real_rate() -> None:
    """A site that allows 4 requests/s (0.25 s spacing) answers 429 when we go faster."""
    policy = _policy(default_delay=0.05, probe_after=20)
    state = DomainState()
    now = 0.0
    for _ in range(20_000):
        delay = policy.effective_delay(state)
        now += delay
        if delay < 0.25:
            policy.on_blocked(state, now, retry_after=0)
        else:
            policy.on_success(state, now)
    assert 0.25 <= state.learned_delay <= 0.25 * 1.1


# --- outcomes, Retry-After, limiter ----------------------------------------------------------


def test_outcome_reports_concurrency_changes() -> None:
    policy = _policy(default_delay=1.0, base_concurrency=2)
    state = DomainState(learned_delay=5.5)
    outcome = policy.on_blocked(state, 0)
    assert (outcome.concurrency_before, outcome.concurrency_after) == (2, 1)
    assert outcome.pacing_changed


def test_retry_after_values() -> None:
    now = 1_700_000_000.0
    assert retry_after_seconds("120", now) == 120
    assert retry_after_seconds(formatdate(now + 30, usegmt=True), now) == pytest.approx(30)
    assert retry_after_seconds(formatdate(now - 30, usegmt=True), now) == 0
    for junk in (None, "", "soon", "-5", "1.5", "Mon, 99 Foo 2020"):
        assert retry_after_seconds(junk, now) is None


@pytest.fixture(params=["in-process", pytest.param("redis", marks=pytest.mark.redis)])
def make_limiter(request: pytest.FixtureRequest):
    """The limiter of one process, or the one whose state is in Redis (shared by processes)."""

    def make(policy: Policy, clock) -> DomainLimiter:
        if request.param == "in-process":
            return DomainLimiter(policy, clock=clock)
        client, name = request.getfixturevalue("redis_client"), request.getfixturevalue("crawl_name")
        return RedisDomainLimiter(policy, policy_store(client, name, policy, clock))

    return make


def test_limiter_uses_its_clock(make_limiter) -> None:
    clock = [100.0]
    limiter = make_limiter(_policy(default_delay=2.0), lambda: clock[0])
    assert limiter.try_start("a.example", "a1")
    assert limiter.try_start("a.example", "a2") is None
    assert limiter.try_start("b.example", "b1")  # one domain does not hold up another
    clock[0] = 102.0
    assert limiter.try_start("a.example", "a3") is None  # a1 has not left yet (the shared one holds its slot too)
    limiter.sent("a.example")
    limiter.sent("b.example")
    assert limiter.try_start("a.example", "a3") is None  # a1 left at 102: its delay counts from then
    limiter.blocked("b.example", retry_after=10)  # at 102: blocked until 112
    clock[0] = 104.0
    assert limiter.try_start("a.example", "a3")
    limiter.sent("a.example")
    clock[0] = 111.9
    assert not limiter.can_start("b.example")
    clock[0] = 112.0
    assert limiter.can_start("b.example")
    assert limiter.try_start("b.example", "b2")
    limiter.sent("b.example")
    clock[0] = 200.0
    assert not limiter.can_start("b.example")  # concurrency 2 reached: two in flight
    limiter.finish("b.example", "b1")
    assert limiter.can_start("b.example")


def test_outcomes_learn_the_same_in_both_limiters(make_limiter) -> None:
    clock = [100.0]
    limiter = make_limiter(_policy(default_delay=0.2), lambda: clock[0])
    limiter.set_robots_delay("a.example", 0.5)
    assert limiter.effective_delay("a.example") == 0.5
    outcome = limiter.blocked("a.example")
    assert outcome.block == 1 and limiter.effective_delay("a.example") == pytest.approx(0.625)
    for _ in range(5):
        assert not limiter.failure("a.example") or _ == 4
    assert limiter.state("a.example").circuit_open_until == pytest.approx(160.0)
    assert limiter.concurrency("a.example") == 2
    limiter.learned("b.example", 3.0, 2.0)
    assert limiter.effective_delay("b.example") == 3.0


def test_a_robots_delay_learned_after_a_start_spaces_the_next_one() -> None:
    policy = _policy(default_delay=0.0)
    state = DomainState()
    policy.start(state, 10.0)  # robots.txt itself, before its delay is known
    policy.set_robots_delay(state, 0.3, 10.0)
    assert not policy.can_start(state, 10.29) and policy.can_start(state, 10.3)
    late = DomainState()
    policy.start(late, 10.0)
    policy.set_robots_delay(late, 0.3, 10.2)  # the rules arrive 0.2 s after the fetch left
    assert not policy.can_start(late, 10.49) and policy.can_start(late, 10.5)
    fresh = DomainState()
    policy.set_robots_delay(fresh, 5, 0.0)
    assert policy.can_start(fresh, 0.0)


def test_a_robots_delay_shorter_than_the_default_spaces_the_page_after_robots_txt_by_itself() -> None:
    policy = _policy(default_delay=1.0)
    state = DomainState()
    policy.start(state, 10.0)  # robots.txt itself, at the default delay
    policy.sent(state, 10.0)
    policy.set_robots_delay(state, 0.5, 10.1)
    assert not policy.can_start(state, 10.59) and policy.can_start(state, 10.6)
    held = DomainState()
    policy.start(held, 10.0)
    policy.sent(held, 10.0)
    held.next_start = 15.0  # a later slot, as the shared frontier holds one until its request left
    policy.set_robots_delay(held, 0.5, 10.1)
    assert held.next_start == 15.0


# --- circuit breaker -----------------------------------------------------------------------------


def test_five_failures_open_the_circuit_for_a_minute_then_one_probe_at_a_time() -> None:
    policy = _policy(default_delay=0.0, base_concurrency=4, circuit_failures=5, circuit_open_seconds=60)
    state = DomainState()
    for _ in range(4):
        assert not policy.on_failure(state, 100.0)
    assert policy.can_start(state, 100.0)
    assert policy.on_failure(state, 100.0)
    assert not policy.can_start(state, 159.9)
    assert policy.ready_at(state) == 160.0
    assert policy.can_start(state, 160.0)
    policy.start(state, 160.0)
    assert not policy.can_start(state, 161.0)  # half-open: one probe in flight at most
    policy.finish(state)
    policy.on_success(state, 161.0)
    assert state.circuit_open_until is not None  # one success is not enough
    policy.start(state, 161.0)
    policy.finish(state)
    policy.on_success(state, 162.0)
    assert state.circuit_open_until is None
    policy.start(state, 162.0)
    assert policy.can_start(state, 162.0)  # closed: concurrency is back


def test_a_failed_probe_opens_the_circuit_again() -> None:
    policy = _policy(circuit_failures=5, circuit_open_seconds=60)
    state = DomainState()
    for _ in range(5):
        policy.on_failure(state, 0.0)
    assert policy.on_failure(state, 60.0)  # the probe failed
    assert not policy.can_start(state, 119.0) and policy.can_start(state, 120.0)


def test_a_success_resets_the_failure_streak() -> None:
    policy = _policy(circuit_failures=3)
    state = DomainState()
    policy.on_failure(state, 0)
    policy.on_failure(state, 0)
    policy.on_success(state, 0)
    assert not policy.on_failure(state, 0) and state.circuit_open_until is None


def test_spacing_counts_from_when_the_request_leaves() -> None:
    policy = _policy(default_delay=1.0, base_concurrency=4)
    state = DomainState()
    reservation = policy.start(state, 10.0)
    policy.sent(state, 10.04)  # 40 ms between the frontier and the network
    assert not policy.can_start(state, 11.0) and policy.can_start(state, 11.04)
    policy.unreserve(state, reservation)  # too late: it was sent
    assert state.next_start == 11.04


# --- people's controls: overrides, pause, reset ---------------------------------------------------


def test_an_override_delay_replaces_the_default_and_the_minimum() -> None:
    policy = _policy(default_delay=1.0, min_delay=0.5)
    assert policy.effective_delay(DomainState(override_delay=0.1)) == 0.1
    assert policy.effective_delay(DomainState(override_delay=3.0)) == 3.0
    assert policy.effective_delay(DomainState(override_delay=0.0)) == 0.0


def test_robots_and_learned_delays_win_over_an_override_when_longer() -> None:
    policy = _policy(default_delay=1.0)
    assert policy.effective_delay(DomainState(override_delay=0.1, robots_delay=2.0)) == 2.0
    assert policy.effective_delay(DomainState(override_delay=3.0, robots_delay=2.0)) == 3.0
    assert policy.effective_delay(DomainState(override_delay=0.1, learned_delay=0.7)) == 0.7
    assert policy.effective_delay(DomainState(override_delay=0.1, robots_delay=100.0)) == 60.0  # the cap still holds


def test_an_override_concurrency_replaces_the_base_and_learning_still_lowers_it() -> None:
    policy = _policy(base_concurrency=2, default_delay=0.0, concurrency_step=5.0)
    assert policy.concurrency(DomainState(override_concurrency=10)) == 10
    assert policy.concurrency(DomainState(override_concurrency=1)) == 1
    assert policy.concurrency(DomainState(override_concurrency=10, learned_delay=11.0)) == 8
    state = DomainState(override_concurrency=4)
    for holder in range(4):
        assert policy.can_start(state, 0.0), holder
        policy.start(state, 0.0)
    assert not policy.can_start(state, 0.0)


def test_a_paused_domain_starts_nothing_until_resumed() -> None:
    policy = _policy(default_delay=0.0)
    state = DomainState()
    policy.start(state, 0.0)
    state.paused = True
    assert not policy.can_start(state, 10.0)
    policy.finish(state)  # what was in flight finishes
    assert not policy.can_start(state, 10.0) and state.inflight == 0
    state.paused = False
    assert policy.can_start(state, 10.0)


def test_reset_forgets_learned_delay_floor_block_and_circuit_but_keeps_robots_and_controls() -> None:
    policy = _policy(default_delay=1.0, circuit_failures=1)
    state = DomainState(
        robots_delay=2.0, override_concurrency=3, learned_delay=9.0, floor=8.0, probe_from=9.5, latency=0.2
    )
    policy.on_blocked(state, 100.0, retry_after=60)
    policy.on_failure(state, 100.0)
    policy.reset(state)
    assert (state.learned_delay, state.floor, state.blocked_until, state.circuit_open_until, state.probe_from) == (
        0,
        0,
        0,
        None,
        None,
    )
    assert (state.blocking_streak, state.failure_streak, state.success_streak, state.probe_successes) == (0, 0, 0, 0)
    assert (state.robots_delay, state.override_concurrency, state.latency) == (2.0, 3, 0.2)
    assert policy.can_start(state, 100.0) and policy.effective_delay(state) == 2.0


def test_circuit_is_closed_open_then_half_open() -> None:
    policy = _policy(circuit_failures=1, circuit_open_seconds=60)
    state = DomainState()
    assert policy.circuit(state, 0.0) == "closed"
    policy.on_failure(state, 0.0)
    assert policy.circuit(state, 59.9) == "open"
    assert policy.circuit(state, 60.0) == "half_open"


def test_domain_controls_apply_the_same_in_both_limiters(make_limiter) -> None:
    import asyncio

    from crawler.politeness.overrides import ControlTable, DomainControl

    clock = [100.0]
    limiter = make_limiter(_policy(default_delay=1.0, base_concurrency=2), lambda: clock[0])
    if isinstance(limiter, RedisDomainLimiter):  # a domain the crawl has queued
        limiter.store.push("a.example", 0, "http://a.example/\t{}")
    assert limiter.try_start("a.example", "a0")
    limiter.sent("a.example")  # each request leaves as it starts: the next counts from then
    configured = ControlTable({"a.example": DomainControl(concurrency=3, min_delay=0.25)})
    asyncio.run(limiter.set_controls(configured))
    assert limiter.effective_delay("a.example") == 0.25 and limiter.concurrency("a.example") == 3
    limiter.set_robots_delay("b.example", None)  # a domain first seen after the controls came
    assert limiter.effective_delay("b.example") == 1.0
    clock[0] = 101.0
    assert limiter.try_start("a.example", "a1")
    limiter.sent("a.example")
    clock[0] = 101.25
    assert limiter.try_start("a.example", "a2")
    limiter.sent("a.example")
    clock[0] = 101.5
    assert limiter.try_start("a.example", "a3") is None  # three in flight
    limiter.finish("a.example", "a0")
    asyncio.run(limiter.set_controls(configured.with_runtime({"a.example": DomainControl(paused=True)})))
    assert limiter.try_start("a.example", "a4") is None and not limiter.can_start("a.example")
    assert limiter.concurrency("a.example") == 3  # the setting's values stay under an operator's pause
    asyncio.run(limiter.set_controls(configured))
    assert limiter.try_start("a.example", "a4")
    limiter.sent("a.example")
    limiter.blocked("a.example", retry_after=30)
    assert limiter.effective_delay("a.example") > 0.25 and not limiter.can_start("a.example")
    asyncio.run(limiter.reset("a.example"))
    assert limiter.effective_delay("a.example") == 0.25 and limiter.state("a.example").blocked_until == 0


def test_a_domain_waits_until_its_last_request_has_left() -> None:
    # Held up 1.5 s on a busy process, the request reaches the site late: the next one may
    # not start on the reserved slot's time, only a delay after the first really left.
    policy = _policy(default_delay=1.0, base_concurrency=2, send_timeout=30.0)
    state = DomainState()
    policy.start(state, 10.0)
    assert not policy.can_start(state, 11.0) and not policy.can_start(state, 11.5)
    assert policy.ready_at(state) == 40.0  # at the latest, unless told it left
    policy.sent(state, 11.5)
    assert policy.ready_at(state) == 12.5
    assert not policy.can_start(state, 12.499) and policy.can_start(state, 12.5)


def _slotted_at_ten_and_sent_at(moment: float) -> tuple[Policy, DomainState]:
    """A domain at 1 s with a 0.25 s hand-out lead, whose request of the slot at 10.0 left at ``moment``."""
    policy = _policy(default_delay=1.0, handout_lead=0.25)
    state = DomainState()
    policy.start(state, 10.0)
    policy.sent(state, moment)
    return policy, state


def test_the_next_request_is_handed_out_ahead_of_its_slot_and_leaves_on_it() -> None:
    policy, state = _slotted_at_ten_and_sent_at(10.1)
    assert policy.ready_at(state) == pytest.approx(10.85)
    assert not policy.can_start(state, 10.84) and policy.can_start(state, 10.85)
    reservation = policy.start(state, 10.85)  # the slot is at 11.1, not at the hand-out
    assert reservation == pytest.approx(12.1) and state.last_start == pytest.approx(11.1)
    assert policy.departure_at(state) == pytest.approx(11.1)
    assert not policy.can_start(state, 11.5)  # one ahead at a time: the next waits until it left


def test_a_request_handed_out_ahead_leaves_a_delay_after_the_last_really_left() -> None:
    # Its predecessor reached the network late: the hand-out counted from the slot, the
    # departure from the predecessor's real one, with the delay in force when it goes.
    policy, state = _slotted_at_ten_and_sent_at(10.4)
    assert policy.departure_at(state) == pytest.approx(11.4)
    state.robots_delay = 2.0
    assert policy.departure_at(state) == pytest.approx(12.4)
    policy.on_blocked(state, 12.0, retry_after=5.0)
    assert policy.departure_at(state) == pytest.approx(17.0)


def test_nothing_waits_to_leave_without_a_delay_or_before_the_first_departure() -> None:
    assert _policy(default_delay=1.0).departure_at(DomainState()) == 0.0
    policy = _policy(default_delay=0.0, handout_lead=0.25)
    state = DomainState()
    policy.start(state, 10.0)
    policy.sent(state, 10.0)
    assert policy.departure_at(state) == 10.0 and policy.can_start(state, 10.0)


def test_a_request_that_never_leaves_holds_its_domain_only_until_the_send_timeout() -> None:
    policy = _policy(default_delay=1.0, send_timeout=30.0)
    state = DomainState()
    policy.start(state, 10.0)
    assert not policy.can_start(state, 39.999) and policy.can_start(state, 40.0)


def test_a_slot_given_back_stops_the_wait_for_its_request() -> None:
    policy = _policy(default_delay=1.0)
    state = DomainState()
    reservation = policy.start(state, 10.0)
    assert not policy.can_start(state, 10.5)
    policy.unreserve(state, reservation)  # dropped before the network (robots.txt, a filter)
    assert state.unsent_until == 0.0 and policy.can_start(state, 10.5)


def test_without_a_delay_nothing_waits_for_requests_to_leave() -> None:
    policy = _policy(default_delay=0.0, base_concurrency=3)
    state = DomainState()
    policy.start(state, 10.0)
    policy.start(state, 10.0)
    assert policy.can_start(state, 10.0)


def test_idle_domains_are_evicted_and_keep_what_they_learned() -> None:
    clock = [1_000.0]
    limiter = DomainLimiter(_policy(default_delay=1.0), lambda: clock[0])
    for domain in ("quiet.example", "learned.example", "busy.example", "queued.example", "blocked.example"):
        limiter.try_start(domain)
        limiter.sent(domain)
        limiter.finish(domain)
    limiter.blocked("learned.example")  # learns a longer delay
    limiter.success("learned.example")
    clock[0] = 1_001.0
    assert limiter.try_start("busy.example")  # still in flight
    clock[0] = 1_100.0
    limiter.blocked("blocked.example", retry_after=600)
    clock[0] = 1_650.0
    evicted = limiter.evict_idle(clock[0], 600.0, keep={"queued.example"})
    assert sorted(evicted) == ["learned.example", "quiet.example"]
    assert set(limiter.states) == {"busy.example", "queued.example", "blocked.example"}
    assert limiter.evicted_learning == {"learned.example": (2.0, 0.0)}
    assert limiter.effective_delay("learned.example") == 2.0  # back with its learned delay
    assert limiter.effective_delay("quiet.example") == 1.0
    assert limiter.evicted_learning == {}

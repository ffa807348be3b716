"""Which shards a worker asks for work (pure, with the time given)."""

from __future__ import annotations

from crawler.frontier.shard_choice import ShardChoice

SHARDS = [f"s{n}" for n in range(6)]


def test_a_pop_is_split_over_as_many_shards_as_it_asks_requests_in_turn() -> None:
    choice = ShardChoice(SHARDS, poll_seconds=0.25)
    assert choice.asks(0.0, 4) == [("s0", 1), ("s1", 1), ("s2", 1), ("s3", 1)]
    for shard in ("s0", "s1", "s2", "s3"):
        choice.answered(shard, 0.0, 1, 1, None)  # each gave what it was asked: due again at once
    # the turn goes on: the shards not asked yet first, then round again
    assert choice.asks(0.0, 4) == [("s4", 1), ("s5", 1), ("s0", 1), ("s1", 1)]


def test_one_shard_due_gets_the_whole_pop() -> None:
    choice = ShardChoice(SHARDS[:2], poll_seconds=10.0)
    choice.answered("s0", 0.0, 2, 0, 5.0)
    assert choice.asks(1.0, 3) == [("s1", 3)]


def test_a_shard_is_asked_again_when_it_said_work_may_be_ready_and_the_wait_is_one_sleep() -> None:
    choice = ShardChoice(SHARDS[:3], poll_seconds=10.0)
    choice.answered("s0", 100.0, 1, 0, 2.0)  # a domain's slot in 2 s
    choice.answered("s1", 100.0, 1, 0, 0.5)
    choice.answered("s2", 100.0, 1, 0, None)  # empty: asked again after the poll time
    assert choice.asks(100.4, 4) == []
    assert abs(choice.wait(100.4) - 0.1) < 1e-9
    assert choice.asks(100.5, 4) == [("s1", 4)]
    assert choice.asks(102.0, 4) == [("s0", 4)]  # s1's answer not come yet: not asked twice
    choice.may_be_ready("s2")  # a push of this process into s2
    assert [shard for shard, _ in choice.asks(102.0, 4)][0] == "s2"


def test_the_shards_due_longest_come_first() -> None:
    choice = ShardChoice(SHARDS[:3], poll_seconds=1.0)
    choice.answered("s0", 10.0, 1, 0, 0.9)
    choice.answered("s1", 10.0, 1, 0, 0.1)
    choice.answered("s2", 10.0, 1, 0, 0.5)
    assert [shard for shard, _ in choice.asks(11.0, 3)] == ["s1", "s2", "s0"]


def test_a_shard_said_ready_at_a_later_time_is_asked_then_unless_it_was_due_sooner() -> None:
    choice = ShardChoice(SHARDS[:2], poll_seconds=1.0)
    for shard in SHARDS[:2]:
        choice.answered(shard, 0.0, 1, 0, None)  # empty: asked again after the poll time
    choice.may_be_ready("s0", at=0.1)  # its slot comes free soon: asked then, not at once
    assert choice.asks(0.05, 1) == [] and choice.wait(0.05) == 0.1 - 0.05
    assert choice.asks(0.1, 1) == [("s0", 1)]
    choice.answered("s0", 0.1, 1, 0, 0.3)  # due at 0.4
    choice.may_be_ready("s0", at=0.9)  # later than it was due: the sooner time stands
    assert choice.wait(0.1) == 0.4 - 0.1


def test_a_shard_that_keeps_holding_nothing_is_asked_less_and_less_often_until_something_happens() -> None:
    choice = ShardChoice(SHARDS[:1], poll_seconds=0.25, empty_poll_seconds=2.0)
    now, waits = 0.0, []
    for _ in range(6):
        assert choice.asks(now, 1) == [("s0", 1)]
        choice.answered("s0", now, 1, 0, None)
        waits.append(choice.wait(now))
        now += waits[-1]
    assert waits == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]
    choice.may_be_ready("s0", at=now + 3.0)  # a push of this process: due no later than it was
    choice.asks(now, 1)
    choice.answered("s0", now, 1, 0, None)  # empty again: the poll time starts over
    assert choice.wait(now) == 0.25


def test_a_shard_with_work_coming_is_asked_at_the_poll_time_however_long_it_was_empty() -> None:
    choice = ShardChoice(SHARDS[:1], poll_seconds=0.25, empty_poll_seconds=2.0)
    for now in (0.0, 0.25, 0.75):
        choice.asks(now, 1)
        choice.answered("s0", now, 1, 0, None)
    choice.asks(1.75, 1)
    choice.answered("s0", 1.75, 1, 0, 30.0)  # a request queued, its domain's slot far away
    assert choice.wait(1.75) == 0.25
    choice.asks(2.0, 1)
    choice.answered("s0", 2.0, 1, 0, None)
    assert choice.wait(2.0) == 0.25

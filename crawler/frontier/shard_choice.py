"""Which shards of a shared frontier a worker asks for work, and how much of each (pure: the
caller gives the time).

Each shard is asked again when it may have work: at once after it gave all it was asked, at its
next ready time when it gave less (a domain's slot, a delayed retry, an expiring lease), or after
the poll time when it holds nothing (other processes may add some), a time that doubles with each
answer that it still holds nothing, up to ``empty_poll_seconds``: an idle worker of a crawl of
16 shards asked 64 times a second, most of them shards with nothing in them. Of the shards due, those due
longest are asked first, and among equals the turn goes round, so no shard waits behind another;
the worker sleeps once, until the first shard is due."""

from __future__ import annotations

import math
from collections.abc import Sequence


class ShardChoice:
    def __init__(self, shards: Sequence[str], poll_seconds: float, empty_poll_seconds: float | None = None):
        self.shards = list(shards)
        self.poll_seconds = poll_seconds
        self.empty_poll_seconds = max(poll_seconds, empty_poll_seconds or poll_seconds)
        self.due_at = dict.fromkeys(self.shards, 0.0)
        self._empty_answers = dict.fromkeys(self.shards, 0)  # in a row
        self._turn = 0

    def asks(self, now: float, count: int) -> list[tuple[str, int]]:
        """The shards to ask now and how many requests of each: ``count`` split over at most
        ``count`` shards due."""
        if count < 1:
            return []
        rotation = self.shards[self._turn :] + self.shards[: self._turn]
        due = sorted((shard for shard in rotation if self.due_at[shard] <= now), key=self.due_at.__getitem__)
        chosen = due[:count]
        if not chosen:
            return []
        self._turn = (self._turn + len(chosen)) % len(self.shards)
        for shard in chosen:
            self.due_at[shard] = math.inf  # until it answers
        share, rest = divmod(count, len(chosen))
        return [(shard, share + (index < rest)) for index, shard in enumerate(chosen)]

    def answered(self, shard: str, now: float, asked: int, got: int, wait: float | None) -> None:
        """A shard's answer: ``got`` of ``asked`` requests; ``wait``: seconds until it may have
        more (None: it holds nothing)."""
        if wait is None and not got:
            empty = self._empty_answers[shard] = self._empty_answers[shard] + 1
            self.due_at[shard] = now + min(self.poll_seconds * 2 ** min(empty - 1, 32), self.empty_poll_seconds)
            return
        self._empty_answers[shard] = 0
        if got >= asked:
            self.due_at[shard] = now
        elif wait is None:
            self.due_at[shard] = now + self.poll_seconds
        else:
            self.due_at[shard] = now + min(wait, self.poll_seconds)

    def may_be_ready(self, shard: str, at: float = 0.0) -> None:
        """Something happened in the shard that may make work ready (a push, a slot given back):
        ask it at ``at`` (at once by default), or sooner if it was due sooner."""
        self._empty_answers[shard] = 0
        self.due_at[shard] = min(self.due_at[shard], at)

    def wait(self, now: float) -> float:
        """Seconds until a shard is due (infinite while every shard's answer is awaited)."""
        return max(0.0, min(self.due_at.values()) - now)

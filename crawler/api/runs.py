"""Runs of crawls: the processes (``workers`` rows) of one crawl id whose lives overlap. The
dashboard shows one run, the crawl running, rather than every process the database ever held:
the same command started again tomorrow keeps its crawl id but is another run."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from crawler.storage.values import unix_time

Worker = dict[str, Any]
"""A ``workers`` row as ``overview.mark_liveness`` completes it: its ``stats`` numbers, ``live``."""


@dataclass(slots=True)
class CrawlRun:
    crawl_id: str
    workers: list[Worker]
    """In the order they started."""

    @property
    def running(self) -> bool:
        return any(w["live"] for w in self.workers)

    @property
    def started_at(self) -> float:
        return _started(self.workers[0])

    @property
    def heartbeat_at(self) -> float:
        return max(_heard(w) for w in self.workers)

    def total(self, key: str) -> float:
        return sum(w["stats"].get(key, 0.0) for w in self.workers)

    def summary(self) -> dict[str, Any]:
        last = max(self.workers, key=_heard)
        return {
            "id": self.crawl_id,
            "spider": self.workers[0]["spider"],
            "running": self.running,
            "started_at": self.workers[0]["started_at"],
            "heartbeat_at": last["heartbeat_at"],
            "jobs": list(dict.fromkeys(w["job_id"] for w in self.workers)),
            "workers": len(self.workers),
            "live_workers": sum(1 for w in self.workers if w["live"]),
        }


def latest_runs(workers: Iterable[Worker]) -> list[CrawlRun]:
    """The latest run of each crawl, the most recently started first. A process joins the run
    of the processes of its crawl that were still alive when it started (a live one is alive
    until it is not)."""
    by_crawl: dict[str, list[Worker]] = {}
    for worker in workers:
        by_crawl.setdefault(worker["crawl_id"] or worker["job_id"], []).append(worker)
    runs = []
    for crawl, members in by_crawl.items():
        members.sort(key=_started)
        first, alive_until = 0, -math.inf
        for index, worker in enumerate(members):
            if _started(worker) > alive_until:
                first = index
            alive_until = max(alive_until, math.inf if worker["live"] else _heard(worker))
        runs.append(CrawlRun(crawl, members[first:]))
    return sorted(runs, key=lambda run: run.started_at, reverse=True)


def chosen_run(runs: list[CrawlRun], wanted: str | None = None) -> CrawlRun | None:
    """The run of crawl ``wanted``; without one, the running crawl started last, else the crawl
    heard from last (None: no crawl, or no crawl ``wanted``)."""
    if wanted is not None:
        return next((run for run in runs if run.crawl_id == wanted), None)
    running = [run for run in runs if run.running]
    if running:
        return running[0]
    return max(runs, key=lambda run: run.heartbeat_at, default=None)


def _started(worker: Worker) -> float:
    return unix_time(worker["started_at"]) or 0.0


def _heard(worker: Worker) -> float:
    return unix_time(worker["heartbeat_at"]) or 0.0

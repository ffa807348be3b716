"""Runs of crawls (pure): processes of one crawl id whose lives overlap are one run, the same
crawl started again is another; the run shown is the one asked for, else the crawl running."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from crawler.api.runs import chosen_run, latest_runs


def _worker(
    worker_id: str, crawl: str | None, started: float, heard: float, live: bool = False, pages: float = 0.0
) -> dict[str, Any]:
    return {
        "worker_id": worker_id,
        "job_id": f"job-{worker_id}",
        "crawl_id": crawl,
        "spider": "links",
        "started_at": datetime.fromtimestamp(started, UTC).isoformat(),
        "heartbeat_at": datetime.fromtimestamp(heard, UTC).isoformat(),
        "state": "running" if live else "finished",
        "live": live,
        "stats": {"response_received_count": pages},
    }


def _ids(run: Any) -> list[str]:
    return [w["worker_id"] for w in run.workers]


def test_processes_whose_lives_overlap_are_one_run_and_a_crawl_started_again_is_another() -> None:
    yesterday = _worker("yesterday", "c", 0.0, 100.0, pages=500)
    first = _worker("first", "c", 200.0, 300.0, pages=40)
    joined = _worker("joined", "c", 250.0, 400.0, live=True, pages=60)
    other = _worker("other", "d", 10.0, 50.0)
    runs = latest_runs([joined, yesterday, other, first])
    assert [(run.crawl_id, _ids(run)) for run in runs] == [("c", ["first", "joined"]), ("d", ["other"])]
    current = runs[0]
    assert current.running and current.total("response_received_count") == 100
    assert current.summary()["jobs"] == ["job-first", "job-joined"]
    assert current.summary()["started_at"] == first["started_at"]


def test_a_process_joins_a_run_still_alive_when_it_starts_however_long_ago_it_was_heard() -> None:
    # A live process was heard 4 s ago; one starting now joins it rather than starting a run.
    runs = latest_runs([_worker("long", "c", 0.0, 996.0, live=True), _worker("new", "c", 1000.0, 1000.0, live=True)])
    assert [_ids(run) for run in runs] == [["long", "new"]]


def test_a_process_without_a_crawl_id_is_a_crawl_of_its_own_job() -> None:
    (run,) = latest_runs([_worker("old", None, 0.0, 10.0)])
    assert run.crawl_id == "job-old"


def test_the_run_shown_is_the_one_asked_for_else_the_running_one_started_last_else_the_last_heard() -> None:
    long_running = _worker("long", "a", 0.0, 1000.0, live=True)
    started_later = _worker("later", "b", 500.0, 1000.0, live=True)
    ended = _worker("ended", "c", 600.0, 900.0)
    runs = latest_runs([long_running, started_later, ended])
    assert chosen_run(runs).crawl_id == "b"
    assert chosen_run(runs, "a").crawl_id == "a"
    assert chosen_run(runs, "nope") is None
    ended_earlier = _worker("earlier", "a", 0.0, 800.0)
    assert chosen_run(latest_runs([ended_earlier, ended])).crawl_id == "c"
    assert chosen_run([]) is None

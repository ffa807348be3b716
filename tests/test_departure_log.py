"""``CRAWLER_DEPARTURE_LOG``: after a SIGKILL, the log holds the departure of every request that
reached the server before it (the request log's rows still in their batch die with the process)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from crawler.download.departure_log import DepartureLog, read_departures
from tests.helpers import Database, finish_all, start_crawl, wait_until
from tests.testweb.control import TestWeb

STAMP_AFTER_ARRIVAL = 1.0
"""The stamp is taken a reactor turn after the write: on loopback, after the server read it."""


def test_departures_are_read_whole_lines_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "departures.log"
    log = DepartureLog(path)
    log.departed(1.5, "http://127.0.0.1:8000/a")
    log.departed(2.25, "http://127.0.0.1:8000/b c")
    with path.open("ab") as other:  # another process's line, read while it is being written
        other.write(b"3.000000 99 http://127.0.0.1:8000/c")
        other.flush()
        first, offset = read_departures(path)
        other.write(b"?q=1\n")
    pid = os.getpid()
    assert first == [(1.5, pid, "http://127.0.0.1:8000/a"), (2.25, pid, "http://127.0.0.1:8000/b c")]
    log.departed(4.0, "http://127.0.0.1:8000/d")
    log.close()
    log.close()
    log.departed(5.0, "http://127.0.0.1:8000/after-close")  # a late stamp after the close: nothing
    rest, end = read_departures(path, offset)
    assert rest == [(3.0, 99, "http://127.0.0.1:8000/c?q=1"), (4.0, pid, "http://127.0.0.1:8000/d")]
    assert end == path.stat().st_size


@pytest.mark.integration
def test_a_killed_crawl_leaves_the_departure_of_every_request_the_server_saw(
    web: TestWeb, database: Database, tmp_path: Path
) -> None:
    path = tmp_path / "departures.log"
    began = time.time()
    worker = start_crawl(
        "links",
        database,
        tmp_path / "crawl.log",
        settings={"CRAWLER_DEPARTURE_LOG": str(path)},
        url=web.url("killable"),
    )
    try:
        wait_until(lambda: path.exists() and len(read_departures(path)[0]) >= 30, 60, "30 departures")
    finally:
        killed = time.time()
        worker.kill()  # SIGKILL, by PID: requests in flight (250 ms answers)
        finish_all([worker], [], 10)
    time.sleep(0.5)  # the server logs a request when its answer is written
    # What reached the server well before the kill: its stamp had time to be taken.
    seen = [entry for entry in web.log("killable") if began <= entry.start < killed - 0.5]
    departures: dict[str, list[float]] = {}
    for at, pid, url in read_departures(path)[0]:
        assert pid == worker.pid
        departures.setdefault(url, []).append(at)
    assert len(seen) >= 10
    for entry in seen:
        url = f"{web.url('killable').rstrip('/')}{entry.path}"
        stamps = departures.get(url, [])
        assert any(entry.start - 1.0 <= at <= entry.start + STAMP_AFTER_ARRIVAL for at in stamps), (entry, stamps)

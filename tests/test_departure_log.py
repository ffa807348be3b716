"""``CRAWLER_DEPARTURE_LOG``: every request that reached the server has its departure in the
log, in flight at a SIGKILL too (the request log's rows of those die with the process)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from crawler.download.departure_log import DepartureLog, read_departures
from tests.helpers import Database, finish_all, start_crawl, wait_until
from tests.testweb.control import TestWeb


def test_departures_are_read_whole_lines_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "departures.log"
    log = DepartureLog(path)
    log.departed(1.5, "http://127.0.0.1:8000/a")
    log.departed(2.25, "http://127.0.0.1:8000/b c")
    with path.open("ab") as other:  # another process's line, read while it is being written
        other.write(b"3.000000 http://127.0.0.1:8000/c")
        other.flush()
        first, offset = read_departures(path)
        other.write(b"?q=1\n")
    assert first == [(1.5, "http://127.0.0.1:8000/a"), (2.25, "http://127.0.0.1:8000/b c")]
    log.departed(4.0, "http://127.0.0.1:8000/d")
    log.close()
    rest, end = read_departures(path, offset)
    assert rest == [(3.0, "http://127.0.0.1:8000/c?q=1"), (4.0, "http://127.0.0.1:8000/d")]
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
        wait_until(lambda: path.exists() and len(read_departures(path)[0]) >= 20, 60, "20 departures")
    finally:
        worker.kill()  # SIGKILL, by PID: requests in flight (250 ms answers)
        finish_all([worker], [], 10)
    time.sleep(0.5)  # the server logs a request when its answer is written
    seen = [entry for entry in web.log("killable") if entry.start >= began]
    departures: dict[str, list[float]] = {}
    for at, url in read_departures(path)[0]:
        departures.setdefault(url, []).append(at)
    assert len(seen) >= 20
    for entry in seen:
        url = f"{web.url('killable').rstrip('/')}{entry.path}"
        assert any(at <= entry.start + 0.001 for at in departures.get(url, [])), (entry, departures.get(url))

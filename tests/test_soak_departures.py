"""The soak's reading of the departure log: a request is stamped from it only by a worker the
soak killed, from a line near when the server read it."""

from __future__ import annotations

from pathlib import Path

from bench.realweb import ServedRequest
from bench.soak_checks import Stamp
from bench.soak_departures import DepartureStamps

PORT = 8000


def _served(path: str, start: float) -> ServedRequest:
    return ServedRequest("127.20.0.1", "127.0.0.1", start, start + 0.1, 200, 100, "GET", path, "HTTP/1.1")


def _log(tmp_path: Path, *lines: tuple[float, int, str]) -> Path:
    log = tmp_path / "departures.log"
    log.write_text("".join(f"{at:.6f} {pid} http://127.20.0.1:{PORT}{path}\n" for at, pid, path in lines))
    return log


def test_only_a_killed_worker_s_line_stamps_a_request(tmp_path: Path) -> None:
    stamps = DepartureStamps(_log(tmp_path, (100.0, 11, "/a"), (100.0, 22, "/b")), PORT)
    stamps.killed[11] = 1000.0
    assert stamps.stamp(_served("/a", 100.002)) == Stamp(100.0, None)
    assert stamps.stamp(_served("/b", 100.002)) is None  # its row is missing for another reason


def test_a_pid_used_again_after_the_kill_stamps_nothing(tmp_path: Path) -> None:
    stamps = DepartureStamps(_log(tmp_path, (100.0, 11, "/a")), PORT)
    stamps.killed[11] = 99.0  # killed before; the PID went to another worker since
    assert stamps.stamp(_served("/a", 100.002)) is None


def test_a_line_read_before_its_worker_was_killed_counts_once_it_is(tmp_path: Path) -> None:
    stamps = DepartureStamps(_log(tmp_path, (100.0, 11, "/a")), PORT)
    assert stamps.stamp(_served("/a", 100.002)) is None
    stamps.killed[11] = 1000.0
    assert stamps.stamp(_served("/a", 100.002)) == Stamp(100.0, None)


def test_the_nearest_line_within_the_window_and_never_long_after_the_server_read_it(tmp_path: Path) -> None:
    log = _log(tmp_path, (90.0, 11, "/a"), (99.0, 11, "/a"), (100.5, 11, "/a"), (103.0, 11, "/a"))
    stamps = DepartureStamps(log, PORT)
    stamps.killed[11] = 1000.0
    assert stamps.stamp(_served("/a", 100.2)) == Stamp(100.5, None)
    assert stamps.stamp(_served("/a", 101.8)) == Stamp(100.5, None)  # 103.0 is another request
    assert stamps.stamp(_served("/a", 98.5)) == Stamp(99.0, None)
    assert stamps.stamp(_served("/a", 96.0)) is None  # 90.0 too long before, 99.0 after

"""The soak's samples of a process from ``/proc`` (``bench/soak_samples.py``)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.soak_samples import sample


@pytest.mark.integration
def test_a_process_that_exited_unreaped_samples_as_gone() -> None:
    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 10
    while "State:\tZ" not in Path(f"/proc/{child.pid}/status").read_text():  # exited, not waited for
        assert time.monotonic() < deadline, "the child never exited"
        time.sleep(0.01)
    try:
        assert sample(child.pid, 0.0, ()) is None
    finally:
        child.wait()
    running = subprocess.Popen(["sleep", "30"])
    try:
        taken = sample(running.pid, 0.0, ())
        assert taken is not None and taken.rss_mb > 0 and taken.fds >= 3
    finally:
        running.kill()  # our own child, by its PID
        running.wait()


@pytest.mark.integration
def test_a_process_that_opens_and_closes_files_samples_as_living() -> None:
    # A file descriptor closed between the listing of /proc/PID/fd and its reading (as a process
    # starting up does, loading its libraries) is no sign that the process has gone.
    churn = "import os\nwhile True:\n    os.close(os.open('/dev/null', os.O_RDONLY))\n"
    running = subprocess.Popen([sys.executable, "-c", churn])
    try:
        time.sleep(0.2)
        taken = [sample(running.pid, 0.0, ()) for _ in range(500)]
        assert all(taken), f"{taken.count(None)} of 500 samples of a living process said it had gone"
    finally:
        running.kill()  # our own child, by its PID
        running.wait()

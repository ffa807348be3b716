"""A server the tests start as a process of their own (nginx, tinyproxy, Prometheus, pywb):
started, it is waited for until it answers; stopped, it is signalled by its PID, and killed if it
does not end in time."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar, Self


def listening(address: str, port: int) -> Callable[[], bool]:
    """Whether something accepts connections at ``address:port``."""

    def accepts() -> bool:
        try:
            socket.create_connection((address, port), timeout=1).close()
        except OSError:
            return False
        return True

    return accepts


class ServerProcess:
    name: ClassVar[str]
    stop_signal: ClassVar[signal.Signals] = signal.SIGTERM

    _process: subprocess.Popen[bytes] | None = None

    def start(self) -> Self:
        raise NotImplementedError

    def _launch(
        self,
        command: Sequence[str | Path],
        log: Path,
        ready: Callable[[], bool],
        *,
        timeout: float = 30,
        cwd: Path | None = None,
    ) -> Self:
        """Start ``command`` (its output into ``log``) and wait until ``ready``."""
        with log.open("wb") as output:
            self._process = subprocess.Popen(command, cwd=cwd, stdout=output, stderr=output)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"{self.name} did not start: {log.read_text(errors='replace')[-3000:]}")
            if ready():
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.name} was not ready within {timeout:.0f} s")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(self.stop_signal)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

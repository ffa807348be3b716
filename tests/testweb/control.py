"""Start and stop the test web's server process and read its request log."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers import free_port

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    host: str
    path: str
    method: str
    status: int
    start: float
    end: float


class TestWeb:
    __test__ = False  # not a test class, whatever pytest thinks of the name

    def __init__(self, sites: dict[str, str], first_address: int = 10):
        """``sites`` maps a label to a site spec (``links``, ``heavy:pages=500``); each label
        gets its own loopback address."""
        self.addresses = {label: f"127.0.0.{first_address + i}" for i, label in enumerate(sites)}
        self.specs = sites
        self.port = free_port(next(iter(self.addresses.values()), "127.0.0.1"))
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> TestWeb:
        command = [sys.executable, "-m", "tests.testweb.server", "--port", str(self.port)]
        for label, spec in self.specs.items():
            command += ["--site", f"{self.addresses[label]}={spec}"]
        self._process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if line.strip() != "READY":
            self.stop()
            raise RuntimeError(f"the test web did not start: {line!r}")
        return self

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()
        if process.stdout is not None:
            process.stdout.close()

    @property
    def pid(self) -> int:
        assert self._process is not None, "not started"
        return self._process.pid

    def __enter__(self) -> TestWeb:
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    def base(self, label: str) -> str:
        return f"http://{self.addresses[label]}:{self.port}"

    def url(self, label: str, path: str = "/") -> str:
        return self.base(label) + path

    def log(self, label: str | None = None) -> list[LoggedRequest]:
        entries = self._control("log")
        host = f"{self.addresses[label]}:{self.port}" if label else None
        return [LoggedRequest(**e) for e in entries if host is None or e["host"] == host]

    def clear(self) -> None:
        self._control("clear")

    def _control(self, action: str) -> Any:
        address = next(iter(self.addresses.values()))
        with urllib.request.urlopen(f"http://{address}:{self.port}/__testweb__/{action}", timeout=10) as reply:
            return json.loads(reply.read())

"""A real HTTP proxy for tests: Debian's tinyproxy with basic auth, its own configuration and log
in a folder of the test's, on a loopback address and a free port; started and stopped by its PID."""

from __future__ import annotations

import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests.helpers import free_port

_REQUEST = re.compile(r"Request \(file descriptor \d+\): (\S+) (\S+) HTTP/")


class TinyProxy:
    def __init__(self, folder: Path, user: str, password: str, address: str = "127.0.0.1"):
        self.folder = folder
        self.user = user
        self.password = password
        self.address = address
        self.port = free_port(address)
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The proxy's URL with its credentials, as a crawl is given it."""
        return f"http://{self.user}:{self.password}@{self.address}:{self.port}"

    def start(self) -> TinyProxy:
        binary = shutil.which("tinyproxy") or "/usr/bin/tinyproxy"
        self.folder.mkdir(parents=True, exist_ok=True)
        config = self.folder / "tinyproxy.conf"
        config.write_text(
            f"Port {self.port}\nListen {self.address}\nTimeout 30\nMaxClients 100\nLogLevel Info\n"
            f'LogFile "{self.folder / "tinyproxy.log"}"\nBasicAuth {self.user} {self.password}\n'
        )
        errors = self.folder / "stderr.log"
        with errors.open("wb") as stderr:
            self._process = subprocess.Popen([binary, "-d", "-c", str(config)], stdout=stderr, stderr=stderr)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"tinyproxy did not start: {errors.read_text()}")
            try:
                socket.create_connection((self.address, self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("tinyproxy did not start listening within 15 s")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def requested(self) -> list[str]:
        """The URLs asked of the proxy (``CONNECT`` targets as ``host:port``), in order."""
        path = self.folder / "tinyproxy.log"
        if not path.exists():
            return []
        return [match.group(2) for match in _REQUEST.finditer(path.read_text(errors="replace"))]

    def __enter__(self) -> TinyProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

"""A real HTTP proxy for tests: Debian's tinyproxy with basic auth, its own configuration and log
in a folder of the test's, on a loopback address and a free port; started and stopped by its PID."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tests.helpers import free_port
from tests.server_process import ServerProcess, listening

_REQUEST = re.compile(r"Request \(file descriptor \d+\): (\S+) (\S+) HTTP/")


class TinyProxy(ServerProcess):
    name = "tinyproxy"

    def __init__(self, folder: Path, user: str, password: str, address: str = "127.0.0.1"):
        self.folder = folder
        self.user = user
        self.password = password
        self.address = address
        self.port = free_port(address)

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
        command = [binary, "-d", "-c", str(config)]
        return self._launch(command, self.folder / "stderr.log", listening(self.address, self.port))

    def requested(self) -> list[str]:
        """The URLs asked of the proxy (``CONNECT`` targets as ``host:port``), in order."""
        path = self.folder / "tinyproxy.log"
        if not path.exists():
            return []
        return [match.group(2) for match in _REQUEST.finditer(path.read_text(errors="replace"))]

"""A real nginx for tests: its own configuration, document root and access log in a folder of
the test's, on a loopback address and a free port; started and stopped by its PID."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import free_port

_LOG_FORMAT = "$status $body_bytes_sent $bytes_sent $request_uri"


@dataclass(frozen=True, slots=True)
class Served:
    status: int
    body_bytes: int
    bytes: int
    """Everything sent: status line, headers and body."""
    path: str


class Nginx:
    def __init__(self, folder: Path, address: str = "127.0.0.1", gzip: bool = False):
        self.folder = folder
        self.root = folder / "site"
        self.address = address
        self.gzip = gzip
        """Compress HTML and text on the fly (``Content-Encoding: gzip``, chunked)."""
        self.port = free_port(address)
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.port}/"

    def start(self) -> Nginx:
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        self.root.mkdir(parents=True, exist_ok=True)
        config = self.folder / "nginx.conf"
        # Run as root (CI), the workers would be `nobody`, who cannot read a test's folder.
        user = "user root;" if os.geteuid() == 0 else ""
        config.write_text(f"""
            {user}
            daemon off;
            worker_processes 1;
            pid {self.folder}/nginx.pid;
            error_log {self.folder}/error.log warn;
            events {{ worker_connections 256; }}
            http {{
                log_format counted '{_LOG_FORMAT}';
                access_log {self.folder}/access.log counted;
                client_body_temp_path {self.folder}/tmp-body;
                proxy_temp_path {self.folder}/tmp-proxy;
                fastcgi_temp_path {self.folder}/tmp-fastcgi;
                uwsgi_temp_path {self.folder}/tmp-uwsgi;
                scgi_temp_path {self.folder}/tmp-scgi;
                types {{ text/html html; text/plain txt; }}
                default_type application/octet-stream;
                {"gzip on; gzip_types text/plain;" if self.gzip else ""}
                server {{
                    listen {self.address}:{self.port};
                    root {self.root};
                    index index.html;
                }}
            }}
        """)
        errors = self.folder / "stderr.log"
        with errors.open("wb") as stderr:
            self._process = subprocess.Popen([binary, "-p", str(self.folder), "-c", str(config)], stderr=stderr)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"nginx did not start: {errors.read_text()}")
            try:
                socket.create_connection((self.address, self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("nginx did not start listening within 15 s")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGQUIT)  # graceful: the access log is complete
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def log(self) -> list[Served]:
        path = self.folder / "access.log"
        if not path.exists():
            return []
        served = []
        for line in path.read_text().splitlines():
            status, body_bytes, sent, uri = line.split(" ", 3)
            served.append(Served(int(status), int(body_bytes), int(sent), uri))
        return served

    def __enter__(self) -> Nginx:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

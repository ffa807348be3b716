"""A real nginx for tests: its own configuration, document root and access log in a folder of
the test's, on a loopback address and a free port; started and stopped by its PID."""

from __future__ import annotations

import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import free_port
from tests.server_process import ServerProcess, listening

_LOG_FORMAT = "$status $body_bytes_sent $bytes_sent $request_uri"


@dataclass(frozen=True, slots=True)
class Served:
    status: int
    body_bytes: int
    bytes: int
    """Everything sent: status line, headers and body."""
    path: str


class Nginx(ServerProcess):
    name = "nginx"
    stop_signal = signal.SIGQUIT  # graceful: the access log is complete

    def __init__(self, folder: Path, address: str = "127.0.0.1", gzip: bool = False):
        self.folder = folder
        self.root = folder / "site"
        self.address = address
        self.gzip = gzip
        """Compress HTML and text on the fly (``Content-Encoding: gzip``, chunked)."""
        self.port = free_port(address)

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
        command = [binary, "-p", str(self.folder), "-c", str(config)]
        return self._launch(command, errors, listening(self.address, self.port), timeout=15)

    def log(self) -> list[Served]:
        path = self.folder / "access.log"
        if not path.exists():
            return []
        served = []
        for line in path.read_text().splitlines():
            status, body_bytes, sent, uri = line.split(" ", 3)
            served.append(Served(int(status), int(body_bytes), int(sent), uri))
        return served

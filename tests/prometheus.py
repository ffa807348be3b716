"""A real Prometheus for tests (Debian's package): its own configuration and storage in a folder
of the test's, scraping one target on loopback with a bearer token from a file; queried through
its HTTP API; started and stopped by its PID."""

from __future__ import annotations

import json
import shutil
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from tests.helpers import free_port
from tests.server_process import ServerProcess


class Prometheus(ServerProcess):
    name = "prometheus"

    def __init__(self, folder: Path, target: str, token: str, interval: float):
        self.folder = folder
        self.target = target
        self.token = token
        self.interval = interval
        self.port = free_port()

    def start(self) -> Prometheus:
        binary = shutil.which("prometheus")
        assert binary, "Debian's prometheus is not installed (scripts/debian.sh installs it)"
        self.folder.mkdir(parents=True, exist_ok=True)
        token_file = self.folder / "token"
        token_file.write_text(self.token)
        config = self.folder / "prometheus.yml"
        config.write_text(
            json.dumps(  # YAML is a superset of JSON
                {
                    "global": {"scrape_interval": f"{self.interval}s", "scrape_timeout": f"{self.interval}s"},
                    "scrape_configs": [
                        {
                            "job_name": "crawler",
                            "authorization": {"type": "Bearer", "credentials_file": str(token_file)},
                            "static_configs": [{"targets": [self.target]}],
                        }
                    ],
                }
            )
        )
        command = [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={self.folder / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
        ]
        return self._launch(command, self.folder / "prometheus.log", self._ready)

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=1) as answer:
                return answer.status == 200
        except OSError:
            return False

    def query(self, expression: str) -> list[dict[str, Any]]:
        """The instant vector ``expression`` evaluates to now."""
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": expression})
        with urllib.request.urlopen(url, timeout=10) as answer:
            body = json.load(answer)
        assert body["status"] == "success", body
        return body["data"]["result"]

    def value(self, expression: str) -> float:
        (sample,) = self.query(expression)
        return float(sample["value"][1])

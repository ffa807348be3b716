"""A PostgreSQL server of the test's own (``initdb`` + ``pg_ctl``), to stop and start at will
without touching the shared one."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
from pathlib import Path


def _bin(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if not found:
        raise RuntimeError(f"{name} not found: install the PostgreSQL server package (postgresql)")
    return found


class ThrowawayPostgres:
    def __init__(self, root: Path):
        self.root = root
        self.data = root / "data"
        self.socket_dir = root / "socket"
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *command: str) -> None:
        # PostgreSQL refuses to run as root: run it as the postgres user then.
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=120)

    def init(self) -> ThrowawayPostgres:
        self.socket_dir.mkdir(parents=True)
        self.data.mkdir()
        if os.geteuid() == 0:
            self.root.chmod(0o755)
            shutil.chown(self.root, "postgres")
            for path in (self.data, self.socket_dir):
                shutil.chown(path, "postgres")
        self._run(_bin("initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        return self

    def start(self) -> None:
        options = f"-p {self.port} -k {self.socket_dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "start")

    def stop(self) -> None:
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

"""A real pywb for tests: collections made with its ``wb-manager`` in a folder of the test's, and
its ``wayback`` server on a loopback address and a free port, started and stopped by its PID.

pywb lives in a venv of its own (``.venv-pywb``, which ``./run-tests`` installs from
``requirements-pywb.txt``): it pins packages the crawler pins differently.
"""

from __future__ import annotations

import subprocess
import urllib.request
from pathlib import Path

from tests.helpers import ROOT, free_port
from tests.server_process import ServerProcess, listening

BIN = ROOT / ".venv-pywb" / "bin"
INSTALL = "VENV=.venv-pywb scripts/venv.sh requirements-pywb.txt"


class Pywb(ServerProcess):
    name = "wayback"

    def __init__(self, folder: Path, address: str = "127.0.0.1"):
        if not (BIN / "wayback").exists():
            raise RuntimeError(f"pywb is not installed in {BIN.parent}: run {INSTALL} (./run-tests does)")
        self.folder = folder
        self.address = address
        self.port = free_port(address)

    def collection(self, name: str, warcs: list[Path]) -> None:
        """A collection of ``warcs``, indexed by pywb itself."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self._manage("init", name)
        self._manage("add", name, *map(str, warcs))

    def collection_with_indexes(self, name: str, warcs: list[Path], indexes: list[Path]) -> None:
        """A collection of ``warcs`` that pywb reads through ``indexes`` (CDXJ), not its own."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self._manage("init", name)
        for source, kind in [*((w, "archive") for w in warcs), *((i, "indexes") for i in indexes)]:
            (self.folder / "collections" / name / kind / source.name).write_bytes(source.read_bytes())

    def _manage(self, *arguments: str) -> None:
        subprocess.run([BIN / "wb-manager", *arguments], cwd=self.folder, check=True, capture_output=True, timeout=120)

    def start(self) -> Pywb:
        command = [BIN / "wayback", "-b", self.address, "-p", str(self.port)]
        return self._launch(
            command, self.folder / "wayback.log", listening(self.address, self.port), timeout=60, cwd=self.folder
        )

    def replay(self, collection: str, timestamp: str, url: str) -> tuple[int, dict[str, str], bytes]:
        """The capture of ``url`` at ``timestamp`` (14 digits) as archived (``id_``: not rewritten)."""
        request = urllib.request.Request(f"http://{self.address}:{self.port}/{collection}/{timestamp}id_/{url}")
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, dict(answer.headers.items()), answer.read()

    def __enter__(self) -> Pywb:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

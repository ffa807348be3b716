"""Hours of a shared crawl with faults on a schedule, and invariants that must hold throughout.

    .venv/bin/python -m bench.soak [--minutes 120] [--hosts 40] [--lease 30] [--keep DIR]

Three workers crawl the documentation corpus served by nginx on ``--hosts`` loopback hosts
(``bench/soak_web.py``: a few with ``Crawl-delay``, a few behind a hidden limit answering 429 or
503, a few slow, one that goes down, one slowed to 1 byte a second) through a PostgreSQL and a
Redis of the soak's own. A worker that ends is started again: a killed one rejoins the crawl,
and once a crawl has ended (its frontier empty) the same command begins the next one, a
re-crawl of the pages due again (``--recrawl-interval``). A fourth process, the resident, crawls
a site of its own (``tests/testweb``) for the whole run through the same Redis and PostgreSQL
(the faults of those reach it; no worker fault does): the memory slope of a crawl process that
lives hours. ``scrapy serve`` runs beside them,
polled like a dashboard and scraped like Prometheus; ``scrapy prune`` runs on a schedule with
short retention. Faults come on a schedule (``bench/soak_schedule.py``), each several times in
long runs. The invariants (``bench/soak_checks.py``) are checked every ``CHECK_EVERY`` seconds
from nginx's log, with the crawler's request log (and its departure log, which a killed
worker's stamps outlive) beside it, and from the database; processes
are sampled every minute. The last line prints every figure as ``name=value``; the exit status
is 1 when an invariant was broken.
"""

from __future__ import annotations

import argparse
import secrets
import signal
import sys
import tempfile
import time
from pathlib import Path

from bench.realweb import exit_on_sigterm
from bench.soak_api import ApiWatch
from bench.soak_db import SoakDatabase
from bench.soak_departures import DepartureStamps
from bench.soak_processes import Backends, Prune, Serve, Workers, signal_pid
from bench.soak_report import Report, Sampler
from bench.soak_schedule import Durations, Fault, plan
from bench.soak_watch import Watch
from bench.soak_web import SoakWeb
from tests.helpers import free_port, scrapy_command
from tests.testweb import TestWeb

CHECK_EVERY = 30.0
WORKERS = 3
RESIDENT_SITE = "paced:pages=8000"
"""The resident's site (``tests/testweb``): 8,000 pages, each linking to five others. At the
default delay, one a second, it is more than two hours of work, and the URLs the crawl knows
stop growing after half an hour or so: what the process's memory does after that is its own."""
IDLE_CLOSE = 15.0
"""Seconds a worker waits on an empty frontier before the crawl ends (and the next begins)."""


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=120.0)
    parser.add_argument("--hosts", type=int, default=40)
    parser.add_argument("--lease", type=float, default=30.0, help="CRAWLER_LEASE_SECONDS of the workers")
    parser.add_argument(
        "--connect-timeout", type=float, default=30.0, help="CRAWLER_STORAGE_CONNECT_TIMEOUT of the workers"
    )
    parser.add_argument(
        "--recrawl-interval", type=float, help="seconds before a page is due again (default: a sixth of the run)"
    )
    parser.add_argument("--max-depth", type=int, default=100, help="links followed from each host's index page")
    parser.add_argument("--keep", type=Path, help="keep the logs in this folder")
    return parser.parse_args()


class Soak:
    def __init__(self, args: argparse.Namespace, folder: Path):
        self.args = args
        self.folder = folder
        self.seconds = args.minutes * 60
        self.interval = args.recrawl_interval or max(60.0, self.seconds / 6)
        self.started = time.time()
        durations = Durations(args.lease, args.connect_timeout, site_outage=min(180.0, self.seconds / 5))
        warm_up = min(300.0, self.seconds / 5)
        tail = max(2 * args.lease + 30, self.seconds / 10)
        self.faults = plan(self.seconds, durations, WORKERS, warm_up, tail)
        self.web = SoakWeb(args.hosts)
        self.backends = Backends(folder)
        self.token = secrets.token_hex(16)
        self.departure_log = folder / "departures.log"
        self.departure_log.unlink(missing_ok=True)  # a folder kept from an earlier run
        self.departures = DepartureStamps(self.departure_log, self.web.port)

    def clock(self) -> float:
        return time.time() - self.started

    def say(self, message: str) -> None:
        minutes, seconds = divmod(int(self.clock()), 60)
        print(f"[{minutes:3d}:{seconds:02d}] {message}", flush=True)

    def worker_settings(self) -> dict[str, str]:
        return {
            "DATABASE_URL": self.backends.crawl_database_url,
            "REDIS_URL": self.backends.redis.url,
            "CRAWLER_LEASE_SECONDS": f"{self.args.lease:g}",
            "CRAWLER_STORAGE_CONNECT_TIMEOUT": f"{self.args.connect_timeout:g}",
            "CRAWLER_IDLE_CLOSE_SECONDS": f"{IDLE_CLOSE:g}",
            "CRAWLER_REACTOR_HEARTBEAT_SECONDS": "1",
            "CRAWLER_RECRAWL_MIN_INTERVAL": f"{self.interval:g}",
            "CRAWLER_RECRAWL_INITIAL_INTERVAL": f"{self.interval:g}",
            "CRAWLER_RECRAWL_MAX_INTERVAL": f"{self.interval * 1.5:g}",
            "CRAWLER_UNSAVED_ROWS_DIR": str(self.folder),
            "CRAWLER_DEPARTURE_LOG": str(self.departure_log),
            "LOG_LEVEL": "INFO",
        }

    def run(self) -> int:
        with self.web, TestWeb({"resident": RESIDENT_SITE}) as resident_web:
            self.backends.start()
            try:
                return self._run(resident_web)
            finally:
                self.backends.stop()

    def _run(self, resident_web: TestWeb) -> int:
        seeds = self.folder / "seeds.txt"
        seeds.write_text("".join(self.web.url(address) + "\n" for address in self.web.addresses))
        command = scrapy_command(
            "crawl",
            "links",
            "-a",
            f"seeds_file={seeds}",
            "-a",
            f"max_depth={self.args.max_depth}",
            "-a",
            "crawl=soak",
            settings=self.worker_settings(),
        )
        workers = Workers(command, self.folder, WORKERS, self.clock)
        # One process crawls for the whole run (its own crawl, at the default delay, waiting for
        # work for ever as a worker does by default): the slope of a process that lives hours.
        resident_command = scrapy_command(
            "crawl",
            "links",
            "-a",
            f"url={resident_web.url('resident')}",
            "-a",
            "crawl=soak-resident",
            settings={**self.worker_settings(), "CRAWLER_IDLE_CLOSE_SECONDS": "0"},
        )
        resident = Workers(resident_command, self.folder, 1, self.clock, name="resident")
        database = SoakDatabase(self.backends.postgres.url, self.web.port)
        watch = Watch.of(self.web, database, self.departures, self.interval)
        shared = {"DATABASE_URL": self.backends.crawl_database_url, "REDIS_URL": self.backends.redis.url}
        token_file = self.folder / "metrics.token"  # a file: a token on a command line is seen by anyone's ps
        token_file.write_text(self.token + "\n")
        serve = Serve(
            free_port(), self.folder / "serve.log", {**shared, "CRAWLER_API_METRICS_TOKEN_FILE": str(token_file)}
        )
        api = ApiWatch(serve.url, self.token)
        sampler = Sampler(database, (self.backends.proxy.port, self.backends.redis.port))  # type: ignore[union-attr]
        prune = Prune(self.folder, shared, retain=max(900.0, 3 * CHECK_EVERY), every=max(60.0, self.seconds / 12))
        self.say(
            f"{len(self.web.addresses)} hosts on port {self.web.port} ({', '.join(f'{r} {len(a)}' for r, a in self.web.roles.items())}), "
            f"{WORKERS} workers, leases {self.args.lease:g} s, re-crawl interval {self.interval:g} s, "
            f"{len(self.faults)} faults: {', '.join(f'{f.kind}@{f.start:.0f}s' for f in self.faults)}"
        )
        pending = list(self.faults)
        active: list[tuple[Fault, float, int | None]] = []
        done: list[tuple[Fault, float, float, int | None]] = []
        next_check = next_sample = 0.0
        workers.keep_running()
        resident.keep_running()
        try:
            while self.clock() < self.seconds:
                now = self.clock()
                workers.keep_running()
                resident.keep_running()
                if serve.process is None and now > 10:
                    serve.start()
                    api.start()
                while pending and pending[0].start <= now:
                    fault = pending.pop(0)
                    active.append((fault, self.clock(), self._begin(fault, workers)))
                for entry in [e for e in active if e[0].end <= now]:
                    fault, began, pid = entry
                    self._end(fault, workers, pid)
                    active.remove(entry)
                    done.append((fault, began, self.clock(), pid))
                if now >= next_sample:
                    next_sample = now + 60.0
                    sampler.sample(now, [workers, resident], serve, self.backends, self.web)
                if now >= next_check:
                    next_check = now + CHECK_EVERY
                    watch.check()
                prune.tick(now)
                time.sleep(0.5)
        finally:
            self.say("stopping the workers (SIGTERM: rows stored, leases given back)")
            for fault, began, pid in active:
                self._end(fault, workers, pid)
                done.append((fault, began, self.clock(), pid))
            workers.stop_all()
            resident.stop_all()
            api.stop()
            serve.stop()
            prune.stop()
        watch.check(final=True)
        report = Report(self, watch, workers, sampler, api, prune, done, database)
        return report.print()

    def _begin(self, fault: Fault, workers: Workers) -> int | None:
        pid = None
        if fault.kind == "worker_killed":
            pid = workers.signal(fault.target, signal.SIGKILL)
            if pid is not None:
                self.departures.killed[pid] = time.time()
        elif fault.kind == "worker_stopped":
            pid = workers.signal(fault.target, signal.SIGSTOP)
        elif fault.kind == "redis_restarted":
            self.backends.restart_redis()
        elif fault.kind == "postgres_restarted":
            self.backends.restart_postgres()
        elif fault.kind == "postgres_unreachable":
            self.backends.proxy.blackhole()  # type: ignore[union-attr]
        elif fault.kind == "site_down":
            self.web.set_down(True)
        elif fault.kind == "site_trickle":
            self.web.set_trickle(True)
        target = f" worker {fault.target} (pid {pid})" if pid else ""
        self.say(f"fault {fault.kind}{target}" + (f" for {fault.duration:.0f} s" if fault.duration else ""))
        return pid

    def _end(self, fault: Fault, workers: Workers, pid: int | None) -> None:
        if fault.kind == "worker_stopped" and pid is not None:
            signal_pid(pid, signal.SIGCONT)
        elif fault.kind == "postgres_unreachable":
            self.backends.proxy.forward()  # type: ignore[union-attr]
        elif fault.kind == "site_down":
            self.web.set_down(False)
        elif fault.kind == "site_trickle":
            self.web.set_trickle(False)
        if fault.duration:
            self.say(f"fault {fault.kind} over")


def main() -> None:
    args = _arguments()
    exit_on_sigterm()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        sys.exit(Soak(args, args.keep).run())
    with tempfile.TemporaryDirectory(prefix="crawler-soak-") as tmp:
        sys.exit(Soak(args, Path(tmp)).run())


if __name__ == "__main__":
    main()

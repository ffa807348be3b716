"""Start-up: CPU seconds from process start to the first request, this crawler's ``scrapy crawl``
on SQLite and on PostgreSQL against stock Scrapy's ``scrapy crawl`` of a trivial spider in a
project made by ``scrapy startproject``, measured in the same run.

    .venv/bin/python -m bench.startup [--runs 5] [--also NAME=PATH ...]

A one-page site on a loopback address answers every path with a page without links. When the
first request of a crawl arrives, the server reads the crawl process's CPU time from the kernel
(``/proc/PID/stat``: user + system of all its threads, in clock ticks), so what the crawl does
after its first request does not count. Each crawl of this crawler runs on a database made by a
crawl before it, as every cron run and scrapyd job after the first does, and asks for a path of
its own, so that it is due. Prints every run, then the medians and the ratio of each to stock.
``--also NAME=PATH`` also starts the project checked out at PATH (``git archive COMMIT | tar -x
-C PATH``), on both databases, interleaved with the others, for before/after figures.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psycopg

from bench.commands import add_also_option, other_checkouts
from bench.crawl_speed import ROOT
from bench.real_corpus import POSTGRES
from tests.helpers import scrapy_command

ADDRESS = "127.0.0.61"
PAGE = b"<!doctype html><html><head><title>start</title></head><body><p>Nothing to follow.</p></body></html>"
TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")

STOCK_SPIDER = """
import scrapy


class TrivialSpider(scrapy.Spider):
    name = "trivial"

    def __init__(self, url, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [url]

    def parse(self, response):
        yield {"url": response.url, "title": response.css("title::text").get()}
"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far, its threads included."""
    # Fields after the command name, which is in parentheses and may hold spaces.
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    user, system = int(fields[11]), int(fields[12])
    return (user + system) / TICKS_PER_SECOND


class FirstRequestServer(ThreadingHTTPServer):
    """Serves ``PAGE`` on every path; notes the CPU time of ``crawl_pid`` at its first request."""

    def __init__(self) -> None:
        super().__init__((ADDRESS, 0), _Handler)
        self.crawl_pid = 0
        self.first_request_cpu: float | None = None
        self._lock = threading.Lock()

    def expect(self, pid: int) -> None:
        with self._lock:
            self.crawl_pid, self.first_request_cpu = pid, None

    def request_arrived(self) -> None:
        with self._lock:
            if self.first_request_cpu is None and self.crawl_pid:
                self.first_request_cpu = cpu_seconds(self.crawl_pid)


class _Handler(BaseHTTPRequestHandler):
    server: FirstRequestServer

    def do_GET(self) -> None:
        self.server.request_arrived()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def first_request_server() -> Iterator[FirstRequestServer]:
    server = FirstRequestServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def cpu_to_first_request(server: FirstRequestServer, command: list[str], cwd: Path, project: Path) -> float:
    """Run ``command`` to its end; the CPU seconds it took to its first request."""
    process = subprocess.Popen(
        command,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(project)},
    )
    server.expect(process.pid)
    _, errors = process.communicate(timeout=120)
    if process.returncode != 0 or server.first_request_cpu is None:
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode}):\n{errors[-3000:]}")
    return server.first_request_cpu


def stock_project(folder: Path) -> Path:
    """A project as ``scrapy startproject`` makes it, with one trivial spider."""
    subprocess.run(scrapy_command("startproject", "stockstart", str(folder)), check=True, capture_output=True)
    (folder / "stockstart" / "spiders" / "trivial.py").write_text(STOCK_SPIDER)
    return folder


@contextmanager
def postgres_database() -> Iterator[str]:
    name = f"bench_startup_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{POSTGRES}/{name}"
    finally:
        with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    add_also_option(parser)
    args = parser.parse_args()
    projects = {"crawler": ROOT} | other_checkouts(args)
    starts = ["stock"] + [f"{name} {database}" for name in projects for database in ("sqlite", "postgresql")]
    seconds: dict[str, list[float]] = {start: [] for start in starts}
    with (
        first_request_server() as server,
        tempfile.TemporaryDirectory() as tmp,
        postgres_database() as postgres_url,
    ):
        site = f"http://{ADDRESS}:{server.server_port}"
        stock = stock_project(Path(tmp) / "stock")
        databases = {"sqlite": f"sqlite:///{tmp}/startup.db", "postgresql": postgres_url}

        def run(start: str, n: int) -> float:
            if start == "stock":
                command = scrapy_command("crawl", "trivial", "-a", f"url={site}/{n}")
                return cpu_to_first_request(server, command, stock, ROOT)
            name, database = start.split()
            settings = {"DATABASE_URL": databases[database]}
            command = scrapy_command(
                "crawl", "links", "-a", f"url={site}/{start.replace(' ', '-')}/{n}", settings=settings
            )
            return cpu_to_first_request(server, command, projects[name], projects[name])

        # Byte-compiled, as installed code is (with PYTHONDONTWRITEBYTECODE set, every start would
        # compile the project again), and a crawl of each first, not counted: the schemas made.
        for folder in (*(project / "crawler" for project in projects.values()), stock):
            compileall.compile_dir(folder, quiet=1)
        for start in starts:
            run(start, 0)
        for n in range(1, args.runs + 1):
            for start, done in seconds.items():
                done.append(run(start, n))
                print(f"run {n} {start:22} {done[-1]:6.2f} s CPU to the first request", flush=True)
    medians = {start: statistics.median(done) for start, done in seconds.items()}
    print(f"\nCPU seconds from process start to the first request, medians of {args.runs}:")
    for start, median in medians.items():
        print(f"  {start:22} {median:6.2f} s  ({median / medians['stock']:.2f}x stock)")


if __name__ == "__main__":
    main()

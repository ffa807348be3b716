"""The project deployed to a real scrapyd, as its users deploy it: the egg that
``scrapyd-deploy --build-egg`` builds, ``addversion.json``, ``schedule.json`` with settings as
``setting=K=V``, ``DATABASE_URL`` in scrapyd's environment, and ``cancel.json``.

One scrapyd for the module, on a loopback address and a free port, with its own configuration,
eggs, logs and queues in a temporary folder; it is stopped by its PID.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import REDIS_URL
from tests.helpers import FAST, ROOT, Database, free_port, wait_until
from tests.testweb import TestWeb

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Scrapyd:
    url: str
    logs: Path

    def call(self, endpoint: str, **data: Any) -> dict[str, Any]:
        if data:
            answer = requests.post(f"{self.url}/{endpoint}", data=data, timeout=30)
        else:
            answer = requests.get(f"{self.url}/{endpoint}", params={"project": "crawler"}, timeout=30)
        answer.raise_for_status()
        body = answer.json()
        assert body["status"] == "ok", body
        return body

    def schedule(self, spider: str, settings: dict[str, str] | None = None, **arguments: str) -> str:
        """A job of ``spider`` with the test settings, as ``setting=K=V`` pairs; its job id."""
        pairs = [f"{name}={value}" for name, value in {**FAST, **(settings or {})}.items()]
        answer = requests.post(
            f"{self.url}/schedule.json",
            data=[
                ("project", "crawler"),
                ("spider", spider),
                *arguments.items(),
                *(("setting", pair) for pair in pairs),
            ],
            timeout=30,
        )
        body = answer.json()
        assert body["status"] == "ok", body
        return body["jobid"]

    def state(self, job: str) -> str | None:
        jobs = self.call("listjobs.json")
        return next(
            (state for state in ("pending", "running", "finished") if any(j["id"] == job for j in jobs[state])), None
        )

    def wait(self, job: str, state: str, timeout: float = 60) -> float:
        """Seconds until ``job`` is in ``state``."""
        start = time.monotonic()
        wait_until(lambda: self.state(job) == state, timeout, f"job {job} {state}")
        return time.monotonic() - start

    def log(self, spider: str, job: str) -> str:
        path = self.logs / "crawler" / spider / f"{job}.log"
        return path.read_text(encoding="utf-8") if path.exists() else ""


@pytest.fixture(scope="module")
def scrapyd(tmp_path_factory: pytest.TempPathFactory, module_postgres_database: Database) -> Iterator[Scrapyd]:
    home = tmp_path_factory.mktemp("scrapyd")
    port = free_port()
    # scrapyd reads ./scrapyd.conf from the folder it starts in.
    (home / "scrapyd.conf").write_text(
        "[scrapyd]\n"
        f"bind_address = 127.0.0.1\nhttp_port = {port}\n"
        f"eggs_dir = {home / 'eggs'}\nlogs_dir = {home / 'logs'}\ndbs_dir = {home / 'dbs'}\n"
        "items_dir =\njobs_to_keep = 20\nmax_proc = 6\npoll_interval = 0.2\n"
    )
    # The database in scrapyd's environment, not in job arguments; the project only from the egg.
    env = {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "REDIS_URL")}
    env["DATABASE_URL"] = module_postgres_database.url
    with (home / "scrapyd.log").open("wb") as output:
        process = subprocess.Popen([str(BIN / "scrapyd")], cwd=home, stdout=output, stderr=subprocess.STDOUT, env=env)
    server = Scrapyd(f"http://127.0.0.1:{port}", home / "logs")
    try:
        wait_until(lambda: process.poll() is None and _answers(server.url), 30, "scrapyd to listen")
        egg = home / "crawler.egg"
        subprocess.run(
            [str(BIN / "scrapyd-deploy"), "--build-egg", str(egg)], cwd=ROOT, check=True, capture_output=True
        )
        with egg.open("rb") as file:
            answer = requests.post(
                f"{server.url}/addversion.json",
                data={"project": "crawler", "version": "1"},
                files={"egg": file},
                timeout=60,
            )
        assert answer.json()["status"] == "ok", answer.text
        assert answer.json()["spiders"] == 2
        yield server
    finally:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()


def _connected_to(host: str, port: int) -> bool:
    """Whether a TCP connection to ``host:port`` is established on this machine (Linux)."""
    remote = f"{socket.inet_aton(host)[::-1].hex().upper()}:{port:04X}"
    rows = (line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:])
    return any(row[2] == remote and row[3] == "01" for row in rows)


def _answers(url: str) -> bool:
    try:
        return requests.get(f"{url}/daemonstatus.json", timeout=2).ok
    except requests.ConnectionError:
        return False


def test_links_and_sitemap_jobs_write_their_rows_under_scrapyd_job_ids(
    scrapyd: Scrapyd, web: TestWeb, module_postgres_database: Database
) -> None:
    links = scrapyd.schedule("links", url=web.url("links"), max_pages="8")
    sitemap = scrapyd.schedule("sitemap", url=web.url("fallback"))
    for job in (links, sitemap):
        scrapyd.wait(job, "finished")
    jobs = dict(
        module_postgres_database.query("SELECT id, status FROM crawl_jobs WHERE id IN (?, ?)", (links, sitemap))
    )
    assert jobs == {links: "finished", sitemap: "finished"}, scrapyd.log("links", links)[-3000:]
    # The budget of 8 pages: the home page and what it links to first, two of them noindex.
    fetched = module_postgres_database.query(
        "SELECT job_id, COUNT(*) FROM pages WHERE status IN ('fetched', 'noindex') GROUP BY job_id"
    )
    counts = dict(fetched)
    assert counts[links] == 8
    assert counts[sitemap] >= 1
    assert "DATABASE_URL" not in requests.get(f"{scrapyd.url}/listjobs.json", timeout=10).text
    log = scrapyd.log("links", links)
    assert "Traceback" not in log and "Scraped from" not in log


def test_cancel_stops_the_job_and_leaves_skipped_rows(
    scrapyd: Scrapyd, web: TestWeb, module_postgres_database: Database
) -> None:
    job = scrapyd.schedule("links", url=web.url("killable"))

    def some_fetched() -> bool:
        rows = module_postgres_database.query(
            "SELECT COUNT(*) FROM pages WHERE job_id = ? AND status = 'fetched'", (job,)
        )
        return rows[0][0] >= 5

    wait_until(some_fetched, 60, "pages of the job to be written")
    assert scrapyd.call("cancel.json", project="crawler", job=job)["prevstate"] == "running"
    scrapyd.wait(job, "finished", timeout=60)
    log = scrapyd.log("links", job)
    assert "Received SIGINT, shutting down gracefully" in log
    status, reason = module_postgres_database.query(
        "SELECT status, finish_reason FROM crawl_jobs WHERE id = ?", (job,)
    )[0]
    assert (status, reason) == ("stopped", "shutdown")
    skipped = module_postgres_database.query(
        "SELECT COUNT(*) FROM pages WHERE job_id = ? AND status = 'skipped'", (job,)
    )[0][0]
    assert skipped > 0


def test_second_cancel_forces_the_end_of_a_job_still_closing(scrapyd: Scrapyd, web: TestWeb) -> None:
    job = scrapyd.schedule("links", url=web.url("stalling"), settings={"DOWNLOAD_TIMEOUT": "60"})
    host, port = web.url("stalling").split("//")[1].rstrip("/").split(":")
    wait_until(
        lambda: _connected_to(host, int(port)), 60, "the robots.txt request to be on its way (its answer takes 20 s)"
    )
    scrapyd.call("cancel.json", project="crawler", job=job)
    time.sleep(1)
    assert scrapyd.state(job) == "running", "the first cancel is a graceful stop, which waits for the download"
    scrapyd.call("cancel.json", project="crawler", job=job)
    assert scrapyd.wait(job, "finished", timeout=15) < 10
    # The second SIGINT ends the process where it stands: the graceful close never ran.
    log = scrapyd.log("links", job)
    assert "Received SIGINT, shutting down gracefully" in log and "Spider closed" not in log


def test_two_jobs_of_one_shared_crawl_both_end_on_their_own(
    scrapyd: Scrapyd, web: TestWeb, module_postgres_database: Database, crawl_name: str
) -> None:
    shared = {"REDIS_URL": REDIS_URL, "CRAWLER_IDLE_CLOSE_SECONDS": "1"}
    jobs = [scrapyd.schedule("links", settings=shared, url=web.url("fast"), crawl=crawl_name) for _ in range(2)]
    for job in jobs:
        scrapyd.wait(job, "finished", timeout=90)
    statuses = module_postgres_database.query("SELECT id, status FROM crawl_jobs WHERE id IN (?, ?)", tuple(jobs))
    assert dict(statuses) == {job: "finished" for job in jobs}
    prefix = web.url("fast", "/p/")
    fetched = module_postgres_database.query(
        "SELECT url, job_id FROM pages WHERE url LIKE ? AND status IN ('fetched', 'duplicate')", (prefix + "%",)
    )
    assert len(fetched) == 40
    assert {job for _, job in fetched} <= set(jobs)

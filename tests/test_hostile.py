"""Crawls over hostile sites: every case ends as a row that says why, each crawl process stays
under 512 MB, the crawl goes on, and an internal host that only hostile pages point at (127.0.0.1
under every spelling, and ``localhost``) receives nothing, whatever the path: links, redirects,
meta refresh, robots.txt ``Sitemap:`` lines, sitemap entries, an external XML entity.

One crawl per spider and scope, run once for the module; the tests read its rows and logs."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from crawler.identity import normalize_url
from tests.helpers import ROOT, Database, crawl_command, crawl_environment
from tests.testweb import TestWeb
from tests.testweb.control import LoggedRequest
from tests.testweb.raw import CASES, TLS_CASE, RawServer
from tests.testweb.sites import HostileWebSite, target_spellings

pytestmark = pytest.mark.integration

MEMORY_LIMIT_MB = 512
HOSTILE_SETTINGS = {
    "DOWNLOAD_TIMEOUT": "10",
    "RETRY_TIMES": "1",
    "CRAWLER_MAX_LINKS_PER_PAGE": "120",
    "CRAWLER_MAX_LINKS_READ": "2000",
    "CLOSESPIDER_TIMEOUT": "150",
}


@dataclass
class CrawlRun:
    rows: dict[str, dict[str, Any]]
    jobs: list[tuple[Any, ...]]
    peak_mb: float
    log: str
    database: Database
    server_log: list[LoggedRequest]
    """What the hostile test web served during this crawl."""

    def paths(self, web: TestWeb, label: str) -> list[str]:
        host = web.base(label).removeprefix("http://")
        return [entry.path for entry in self.server_log if entry.host == host]


def _crawl(
    web: TestWeb, spider: str, directory: Path, settings: dict[str, str] | None = None, **arguments: str
) -> CrawlRun:
    """Run a crawl and measure its peak memory (the child's own maximum resident set)."""
    web.clear()
    database = Database(f"sqlite:///{directory / 'crawler.db'}")
    log = directory / "crawl.log"
    command = crawl_command(spider, database, settings={**HOSTILE_SETTINGS, **(settings or {})}, **arguments)
    with log.open("wb") as output:
        process = subprocess.Popen(command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT, env=crawl_environment())
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    text = log.read_text(errors="replace")
    assert process.returncode == 0, text[-5000:]
    assert "Traceback" not in text, text[-5000:]
    jobs = database.query("SELECT status, finish_reason FROM crawl_jobs")
    return CrawlRun(database.pages(), jobs, usage.ru_maxrss / 1024, text, database, web.log())


@pytest.fixture(scope="module")
def target() -> Iterator[TestWeb]:
    """The internal host: 127.0.0.1, never a seed."""
    with TestWeb({"secret": "secret"}, first_address=1) as web:
        yield web


@pytest.fixture(scope="module")
def raw() -> Iterator[RawServer]:
    with RawServer("127.0.0.122") as server:
        yield server


@pytest.fixture(scope="module")
def hostile(target: TestWeb) -> Iterator[TestWeb]:
    sites = {"hostile": f"hostile-web:target_port={target.port}", "big-robots": "big-robots"}
    with TestWeb(sites, first_address=120) as web:
        yield web


@pytest.fixture(scope="module")
def links_run(hostile: TestWeb, raw: RawServer, target: TestWeb, tmp_path_factory: pytest.TempPathFactory) -> CrawlRun:
    """The links spider over every hostile case, following links anywhere (scope ``any``)."""
    seeds = ",".join([hostile.url("hostile"), hostile.url("big-robots"), raw.base + "/"])
    return _crawl(hostile, "links", tmp_path_factory.mktemp("links"), url=seeds, scope="any")


@pytest.fixture(scope="module")
def sitemap_run(hostile: TestWeb, links_run: CrawlRun, tmp_path_factory: pytest.TempPathFactory) -> CrawlRun:
    return _crawl(hostile, "sitemap", tmp_path_factory.mktemp("sitemap"), url=hostile.url("hostile"), scope="any")


@pytest.fixture(scope="module")
def site_scope_run(hostile: TestWeb, sitemap_run: CrawlRun, tmp_path_factory: pytest.TempPathFactory) -> CrawlRun:
    """The default scope: redirects and a meta refresh from public pages to another host."""
    seeds = ",".join(
        hostile.url("hostile", path) for path in ("/to-target-302", "/to-target-301-spelled", "/to-target-refresh")
    )
    return _crawl(hostile, "links", tmp_path_factory.mktemp("site"), url=seeds, max_depth="0")


def _by_path(run: CrawlRun, base: str) -> dict[str, dict[str, Any]]:
    return {url.removeprefix(base): row for url, row in run.rows.items() if url.startswith(base)}


def _target_rows(run: CrawlRun, target: TestWeb) -> dict[str, dict[str, Any]]:
    return {url: row for url, row in run.rows.items() if f":{target.port}/" in url}


# --- the address guard -------------------------------------------------------------------------
def test_the_internal_host_receives_nothing_from_any_crawl(
    target: TestWeb, links_run: CrawlRun, sitemap_run: CrawlRun, site_scope_run: CrawlRun
) -> None:
    assert target.log() == []


def test_links_to_the_internal_host_under_every_spelling_are_refused_rows(links_run: CrawlRun, target: TestWeb) -> None:
    rows = _target_rows(links_run, target)
    assert rows.keys() == {normalize_url(f"{base}/secret.txt") for base in target_spellings(str(target.port))}
    for url, row in rows.items():
        assert row["status"] == "blocked_by_policy", (url, row["error"])
        assert (
            row["error"].startswith("address refused: ")
            and "127.0.0.1" in row["error"]
            and "a loopback address" in row["error"]
        ), row["error"]
        assert row["body"] is None and row["text"] is None
    localhost = next(row for url, row in rows.items() if "//localhost:" in url)
    assert localhost["error"] == "address refused: localhost resolves to 127.0.0.1; 127.0.0.1 is a loopback address"
    assert "address_guard/refused/loopback" in links_run.log


def test_redirects_and_meta_refresh_to_the_internal_host_are_refused(
    links_run: CrawlRun, hostile: TestWeb, target: TestWeb
) -> None:
    rows = _by_path(links_run, hostile.base("hostile"))
    for path in ("/to-target-302", "/to-target-301-spelled", "/to-target-refresh"):
        row = rows[path]
        assert row["status"] == "blocked_by_policy", (path, row["error"])
        assert "127.0.0.1" in row["error"] and "a loopback address" in row["error"]
        assert row["body"] is None and row["text"] is None
    assert rows["/to-target-302"]["error"] == (
        f"redirect to http://127.0.0.1:{target.port}/secret.txt: address refused: 127.0.0.1 is a loopback address"
    )


def test_in_the_default_scope_redirects_to_another_host_are_not_followed(
    site_scope_run: CrawlRun, hostile: TestWeb
) -> None:
    rows = _by_path(site_scope_run, hostile.base("hostile"))
    assert set(rows) == {"/to-target-302", "/to-target-301-spelled", "/to-target-refresh"}
    for path, row in rows.items():
        assert row["status"] == "blocked_by_policy"
        assert row["error"].startswith(f"redirect out of scope: {hostile.url('hostile', path)} -> "), row["error"]
        assert row["body"] is None and row["text"] is None and row["http_status"] is None
    assert site_scope_run.peak_mb < MEMORY_LIMIT_MB


def test_sitemap_lines_entries_and_entities_never_reach_the_internal_host(
    sitemap_run: CrawlRun, hostile: TestWeb, target: TestWeb
) -> None:
    rows = _by_path(sitemap_run, hostile.base("hostile"))
    assert rows["/"]["status"] == "fetched" and rows["/empty"]["status"] == "fetched"
    assert rows["/maps/own.xml"]["status"] == "sitemap"
    refused = _target_rows(sitemap_run, target)
    # three Sitemap: lines and every spelling listed in a sitemap
    assert {row["status"] for row in refused.values()} == {"blocked_by_policy"}
    spellings = target_spellings(str(target.port))
    listed = {normalize_url(f"{base}/secret.txt") for base in spellings} | {
        normalize_url(f"{base}/sitemap.xml") for base in spellings[:3]
    }
    assert refused.keys() == listed  # three Sitemap: lines, and every spelling a sitemap lists
    assert sitemap_run.peak_mb < MEMORY_LIMIT_MB


# --- the hostile corpus ------------------------------------------------------------------------
def test_the_hostile_site_is_crawled_completely_and_each_case_says_why(links_run: CrawlRun, hostile: TestWeb) -> None:
    rows = _by_path(links_run, hostile.base("hostile"))
    assert set(HostileWebSite.PAGES) | {"/"} <= rows.keys()
    assert rows["/"]["status"] == "fetched"
    loop = rows["/redirect-loop-a"]
    assert (
        loop["status"] == "error"
        and loop["error"].startswith("redirect loop: ")
        and loop["error"].count("/redirect-loop-a") == 2
    )
    chain = rows["/chain/0"]
    assert chain["status"] == "error" and chain["error"].startswith("more than 5 redirects: ")
    assert "/chain/6" not in links_run.paths(hostile, "hostile")  # five redirects followed, no more
    big = rows["/big-50mb"]
    assert big["status"] == "error" and "larger than" in big["error"] and big["body"] is None
    assert rows["/gzip-bomb"]["status"] == "error" and rows["/gzip-bomb"]["body"] is None
    assert rows["/invalid-utf8"]["status"] == "fetched" and "\ufffd" in rows["/invalid-utf8"]["title"]
    assert rows["/unknown-charset"]["status"] == "fetched" and rows["/unknown-charset"]["title"] == "Unknown charset"
    binary = rows["/binary-as-html"]
    assert binary["status"] == "filtered" and binary["error"] == "content is a PNG image, served as text/html"
    assert binary["body"] is None and binary["text"] is None
    empty = rows["/empty"]
    assert empty["status"] == "fetched" and empty["http_status"] == 200 and not empty["text"]
    many = rows["/many-links"]
    assert many["status"] == "fetched" and many["links_count"] == 2000  # CRAWLER_MAX_LINKS_READ of 100,000
    assert not any(path.startswith("/long?") for path in rows)  # a 100 KB URL is not followed
    assert not any(path.startswith("/long?") for path in links_run.paths(hostile, "hostile"))


def test_a_page_of_dead_links_is_rows_and_the_job_finishes_normally(links_run: CrawlRun, hostile: TestWeb) -> None:
    rows = _by_path(links_run, hostile.base("hostile"))
    dead = [row for path, row in rows.items() if path.startswith("/dead?")]
    assert len(dead) >= 100  # far past the job failure threshold (20)
    assert {(row["status"], row["error"]) for row in dead} == {("error", "HTTP 404")}
    assert links_run.jobs == [("finished", "finished")]


def test_robots_txt_behind_redirects_is_read(links_run: CrawlRun, hostile: TestWeb) -> None:
    rows = _by_path(links_run, hostile.base("hostile"))
    assert rows["/forbidden"]["status"] == "blocked_by_robots"
    assert rows["/forbidden"]["error"] == "Forbidden by robots.txt: Disallow: /forbidden"
    paths = links_run.paths(hostile, "hostile")
    assert paths.count("/robots.txt") == paths.count("/robots-moved.txt") == paths.count("/robots-real.txt") == 1


def test_an_11_mb_robots_txt_is_read_up_to_500_kib(links_run: CrawlRun, hostile: TestWeb) -> None:
    rows = _by_path(links_run, hostile.base("big-robots"))
    assert rows["/"]["status"] == "fetched" and rows["/after"]["status"] == "fetched"
    assert rows["/blocked-early"]["status"] == "blocked_by_robots"
    (stored,) = links_run.database.query(
        "SELECT robots_txt, robots_status FROM domains WHERE domain = ?", (hostile.base("big-robots")[7:],)
    )
    assert stored[1] == 200 and 500 * 1024 - 200 <= len(stored[0]) <= 500 * 1024


def test_broken_servers_are_rows_and_only_what_may_pass_is_retried(links_run: CrawlRun, raw: RawServer) -> None:
    rows = _by_path(links_run, raw.base)
    tls = links_run.rows[raw.base.replace("http://", "https://") + TLS_CASE]
    errors = {path: row["error"] for path, row in rows.items() if path in CASES}
    assert set(errors) == set(CASES), rows.keys()
    assert {rows[path]["status"] for path in CASES} == {"error"}
    assert errors["/endless-headers"] == "response headers larger than 262144 bytes"
    assert errors["/no-http"].startswith("not an HTTP response: ParseError")
    assert "larger than" in errors["/endless-chunked"]
    assert "DownloadTimeoutError" in errors["/slow-body"]
    assert tls["status"] == "error" and tls["error"].startswith("TLS error"), tls["error"]
    attempts = Counter(raw.paths())
    # final at once: one attempt; failures that may pass: retried (RETRY_TIMES = 1)
    assert {
        path: attempts[path] for path in ("/endless-headers", "/no-http", TLS_CASE, "/endless-chunked")
    } == dict.fromkeys(("/endless-headers", "/no-http", TLS_CASE, "/endless-chunked"), 1)
    assert {path: attempts[path] for path in ("/reset", "/hang-up", "/slow-body")} == dict.fromkeys(
        ("/reset", "/hang-up", "/slow-body"), 2
    )


def test_every_crawl_process_stays_under_512_mb(links_run: CrawlRun) -> None:
    print(f"peak resident memory of the crawl process: {links_run.peak_mb:.0f} MB")
    assert links_run.peak_mb < MEMORY_LIMIT_MB, links_run.peak_mb


def test_the_stats_count_the_refusals(links_run: CrawlRun) -> None:
    (stats,) = links_run.database.query("SELECT stats FROM crawl_jobs")
    counters = json.loads(stats[0])
    assert counters["address_guard/refused/loopback"] >= len(target_spellings("1"))
    assert counters["filters/binary_as_text"] == 1
    assert counters["retry/final_at_once"] >= 3

"""A crawl through a real HTTP proxy (Debian's tinyproxy with basic auth, on loopback), given as
``CRAWLER_PROXY`` or as Scrapy reads it from ``http_proxy``: every request, robots.txt included,
goes through it with its credentials; the address guard still refuses a name that resolves to a
loopback address although the proxy, not the crawler, would resolve it; a proxy that fails is
named in the rows."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawler import exitcodes
from tests.helpers import ROOT, Database, crawl_command, crawl_environment, free_port
from tests.testweb import TestWeb
from tests.tinyproxy import TinyProxy

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def target() -> Iterator[TestWeb]:
    """The internal host: 127.0.0.1, where ``localhost`` resolves; never a seed."""
    with TestWeb({"secret": "secret"}, first_address=1) as web:
        yield web


@pytest.fixture(scope="module")
def site(target: TestWeb) -> Iterator[TestWeb]:
    with TestWeb({"pointing": f"pointing:target_port={target.port}"}, first_address=131) as web:
        yield web


def _crawl(database: Database, seed: str, proxy: str, given_as: str, **more: str) -> subprocess.CompletedProcess[str]:
    settings = {"CRAWLER_PROXY": proxy, **more} if given_as == "setting" else more
    environment = {**crawl_environment(), **({"http_proxy": proxy} if given_as == "environment" else {})}
    command = crawl_command("links", database, url=seed, scope="any", settings=settings)
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, env=environment)


@pytest.mark.parametrize("given_as", ["setting", "environment"])
def test_the_site_is_crawled_through_the_proxy_and_the_guard_still_holds(
    target: TestWeb, site: TestWeb, tmp_path: Path, given_as: str
) -> None:
    site.clear()
    target.clear()
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    with TinyProxy(tmp_path / "proxy", "crawler", "s3cret") as proxy:
        result = _crawl(database, site.url("pointing"), proxy.url, given_as)
        asked = proxy.requested()
    assert result.returncode == exitcodes.FINISHED, result.stderr[-5000:]
    base = site.base("pointing")
    assert sorted(asked) == sorted([f"{base}/robots.txt", f"{base}/", f"{base}/page"])
    assert len(site.log()) == 3  # each through the proxy, which authenticated the crawler
    rows = database.pages()
    assert rows[f"{base}/"]["status"] == rows[f"{base}/page"]["status"] == "fetched"
    secret = rows[f"http://localhost:{target.port}/secret.txt"]
    assert secret["status"] == "blocked_by_policy"
    assert secret["error"] == "address refused: localhost resolves to 127.0.0.1; 127.0.0.1 is a loopback address"
    assert target.log() == []


def test_credentials_refused_by_the_proxy_end_the_job_at_once_with_one_line(site: TestWeb, tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    with TinyProxy(tmp_path / "proxy", "crawler", "s3cret") as proxy:
        # No credentials: 407, as every proxy answers. (tinyproxy answers a wrong password with
        # 401 and its own WWW-Authenticate, which a crawler cannot tell from a site's 401.)
        without = proxy.url.replace("crawler:s3cret@", "")
        result = _crawl(database, site.url("pointing"), without, "setting")
        asked = proxy.requested()
    assert result.returncode == exitcodes.JOB_FAILED, result.stderr[-5000:]
    errors = [line.split("] ERROR: ", 1)[1] for line in result.stderr.splitlines() if "] ERROR: " in line]
    assert errors == [
        f"Closing the job (failed_proxy_refused): the proxy http://127.0.0.1:{proxy.port} refused the crawler's "
        "credentials (HTTP 407): check the user name and password of CRAWLER_PROXY or http_proxy"
    ]
    assert asked == [f"{site.base('pointing')}/robots.txt"]  # the first answer ends it
    assert database.query("SELECT status, finish_reason FROM crawl_jobs") == [("failed", "failed_proxy_refused")]


def test_hosts_of_the_no_proxy_list_go_direct(site: TestWeb, tmp_path: Path) -> None:
    site.clear()
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    with TinyProxy(tmp_path / "proxy", "crawler", "s3cret") as proxy:
        host = site.base("pointing").split("//")[1].split(":")[0]
        result = _crawl(database, site.url("pointing"), proxy.url, "setting", CRAWLER_NO_PROXY=f'["{host}"]')
        assert result.returncode == exitcodes.FINISHED, result.stderr[-5000:]
        assert proxy.requested() == []
    assert len(site.log()) == 3


def test_a_proxy_that_refuses_connections_is_named_in_the_rows(site: TestWeb, tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    nowhere = f"http://crawler:s3cret@127.0.0.1:{free_port()}"
    result = _crawl(database, site.url("pointing"), nowhere, "setting")
    assert result.returncode == exitcodes.SEEDS_UNREACHABLE, result.stderr[-5000:]
    (row,) = database.pages().values()
    shown = nowhere.replace("crawler:s3cret@", "")
    assert row["error"] == (
        f"connection refused while fetching robots.txt (through the proxy {shown}): disallow all until it can be fetched"
    )
    assert "s3cret" not in result.stderr

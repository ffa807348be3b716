"""What a crawl's start imports: only what the run uses. Redis (a crawl not shared), PostgreSQL's
driver (a crawl on SQLite), the API, WARC and the Scrapy components the project keeps off are
each a share of every start's CPU (bench/startup.py measures it)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.helpers import ROOT, Database, crawl_command, crawl_environment
from tests.testweb import TestWeb

pytestmark = pytest.mark.integration

NEVER_IMPORTED = {
    "redis": "Redis, in a crawl not shared",
    "scrapy_redis": "Redis, in a crawl not shared",
    "argon2": "the API's passwords",
    "aiohttp": "Scrapy's remote control, off",
    "tldextract": "Scrapy's cookies middleware, off",
    "warcio": "WARC files, off",
}


def imported_packages(web: TestWeb, database: Database) -> set[str]:
    """The top-level packages a one-page crawl imports, from Python's own import log."""
    command = crawl_command("links", database, url=web.url("links"), max_depth="0")
    command[1:1] = ["-X", "importtime"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, env=crawl_environment())
    assert result.returncode == 0, result.stderr[-5000:]
    assert database.pages(), "the crawl fetched nothing"
    return set(re.findall(r"^import time:.*\|\s*([\w]+)", result.stderr, re.MULTILINE))


def test_a_crawl_imports_only_what_it_uses(web: TestWeb, database: Database) -> None:
    packages = imported_packages(web, database)
    assert "crawler" in packages and "selectolax" in packages  # the log is read
    assert {name: why for name, why in NEVER_IMPORTED.items() if name in packages} == {}
    assert ("psycopg" in packages) == (database.backend == "postgresql")


def test_scrapy_s_tls_aliases_are_made_with_the_frames_alone_and_name_their_modules() -> None:
    # In a process of its own, where nothing imported them before the project's package: each
    # alias looks up its module once, with no full reading of the stack (which looks up a module
    # for every frame), and Python's own reading is back afterwards.
    script = """
import inspect
readings = []
finding = inspect.getmodule
def recording(*args, **kwargs):
    readings.append(inspect.stack.__module__)  # the reading in place when a module is looked up
    return finding(*args, **kwargs)
inspect.getmodule = recording
import crawler
inspect.getmodule = finding
from scrapy.core.downloader import contextfactory, tls
print(readings, inspect.stack.__module__ == "inspect" and inspect.stack.__name__ == "stack")
print(tls.ScrapyClientTLSOptions.__module__, contextfactory.ScrapyClientContextFactory.__module__)
"""
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60, env=crawl_environment()
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == [
        "['crawler', 'crawler', 'crawler'] True",
        "scrapy.core.downloader.tls scrapy.core.downloader.contextfactory",
    ]

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
    "crawler.api": "the API, served by its own command",
    "crawler.storage.retention": "scrapy prune's rules",
}


def imported_modules(web: TestWeb, database: Database) -> set[str]:
    """The modules a one-page crawl imports, from Python's own import log."""
    command = crawl_command("links", database, url=web.url("links"), max_depth="0")
    command[1:1] = ["-X", "importtime"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, env=crawl_environment())
    assert result.returncode == 0, result.stderr[-5000:]
    assert database.pages(), "the crawl fetched nothing"
    return set(re.findall(r"^import time:.*\|\s*([\w.]+)", result.stderr, re.MULTILINE))


def test_a_crawl_imports_only_what_it_uses(web: TestWeb, database: Database) -> None:
    modules = imported_modules(web, database)
    assert {"crawler.storage", "crawler.extraction", "selectolax"} <= modules  # the log is read
    never = {
        name: why
        for name, why in NEVER_IMPORTED.items()
        if any(module == name or module.startswith(f"{name}.") for module in modules)
    }
    assert never == {}
    assert ("psycopg" in modules) == (database.backend == "postgresql")


def test_scrapy_s_tls_aliases_are_made_with_the_frames_alone_and_name_their_modules() -> None:
    # In a process of its own, where nothing imported them before the project's package: no
    # alias reads the whole stack or looks its caller's module up among every loaded module's
    # files (Python's own functions, wrapped here, are not called), and they are back afterwards.
    script = """
import inspect
calls = []
reading, finding = inspect.stack, inspect.getmodule
def recorded(name, function):
    def call(*args, **kwargs):
        if name == "stack" or inspect.isframe(args[0]):
            calls.append(name)
        return function(*args, **kwargs)
    return call
inspect.stack, inspect.getmodule = recorded("stack", reading), recorded("getmodule", finding)
wrapped = inspect.stack, inspect.getmodule
import crawler
print(calls, (inspect.stack, inspect.getmodule) == wrapped)
inspect.stack, inspect.getmodule = reading, finding
from scrapy.core.downloader import contextfactory, tls
print(tls.ScrapyClientTLSOptions.__module__, contextfactory.ScrapyClientContextFactory.__module__)
"""
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60, env=crawl_environment()
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == [
        "[] True",
        "scrapy.core.downloader.tls scrapy.core.downloader.contextfactory",
    ]

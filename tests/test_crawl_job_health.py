"""The job failure threshold ends a job whose site is down (its dead links do not: see
``test_hostile``)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from crawler import exitcodes
from tests.helpers import Database, crawl

pytestmark = pytest.mark.integration


def _closed_port(address: str) -> int:
    with socket.socket() as probe:
        probe.bind((address, 0))
        return probe.getsockname()[1]


def test_a_site_that_refuses_connections_fails_the_job(tmp_path: Path) -> None:
    port = _closed_port("127.0.0.124")
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"http://127.0.0.124:{port}/page/{n}\n" for n in range(30)))
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    crawl(
        "links",
        database,
        seeds_file=str(seeds),
        status=exitcodes.JOB_FAILED,
        settings={"ROBOTSTXT_OBEY": "False", "RETRY_TIMES": "0", "CRAWLER_JOB_FAILURE_THRESHOLD": "20"},
    )
    assert database.query("SELECT status, finish_reason FROM crawl_jobs") == [("failed", "failed_consecutive_errors")]
    statuses = {row["status"] for row in database.pages().values()}
    assert "error" in statuses and statuses <= {"error", "skipped"}

"""``scrapy serve`` beside two shared crawl processes of the test web (one host answering 429s),
checked through HTTP only: health, metrics that grow, domains with the 429 host's block and
learned delay, roles on seeding and the seeded URL crawled, a paused domain no longer fetched
(the test web's own log), the politeness audit, the anonymous rate limit.

It needs the crawl side of the contract (heartbeats, domain snapshots, the inbox, the
controls polled, the request log): where a crawl process does not write those tables, it fails."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.api_server import ApiClient, ServeProcess, create_users, migrate
from tests.conftest import REDIS_URL
from tests.helpers import Database, start_crawl
from tests.shared_crawls import finish_cleanly
from tests.testweb import TestWeb

pytestmark = pytest.mark.integration

CRAWL_SETTINGS = {
    "CRAWLER_IDLE_CLOSE_SECONDS": "6",
    "CRAWLER_HEARTBEAT_SECONDS": "1",
    "CRAWLER_CONTROL_POLL_SECONDS": "0.5",
    "CRAWLER_DEFAULT_DELAY": "0.05",
}


def _until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(1.0)
    raise AssertionError(f"not within {timeout} s: {what}")


def _pages_fetched(client: ApiClient) -> float:
    text = client.get("/metrics").body.decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    return families["crawler_pages_fetched"].samples[0].value


def test_serve_beside_two_shared_crawl_processes(
    web: TestWeb, postgres_database: Database, crawl_name: str, tmp_path: Path
) -> None:
    web.clear()
    migrate(postgres_database)
    create_users(postgres_database)
    server = ServeProcess(postgres_database, tmp_path / "serve.log", {"REDIS_URL": REDIS_URL})
    settings = {"REDIS_URL": REDIS_URL, "CRAWLER_CRAWL_ID": crawl_name, **CRAWL_SETTINGS}
    seeds = f"{web.url('fast')},{web.url('throttling')}"
    logs = [tmp_path / f"worker-{n}.log" for n in range(2)]
    workers = [start_crawl("links", postgres_database, log, url=seeds, settings=settings) for log in logs]
    fast, throttled = (f"{web.addresses[label]}:{web.port}" for label in ("fast", "throttling"))
    try:
        anonymous = server.client("127.0.2.1")
        viewer = server.client("127.0.2.2").login("viewer")
        admin = server.client("127.0.2.3").login("admin")
        assert anonymous.get("/health").status == 200
        assert anonymous.get("/api/domains").status == 401
        newcomer = server.client("127.0.2.9")
        answers = [newcomer.get("/api/stats") for _ in range(11)]
        assert [a.status for a in answers[:10]] == [200] * 10 and answers[10].status == 429
        assert int(answers[10].headers["retry-after"]) >= 1
        seeded = web.url("fast", "/p/seeded-through-the-api")
        assert viewer.post("/api/frontier/seed", {"urls": [seeded]}).status == 403
        assert admin.post("/api/frontier/seed", {"urls": [seeded]}).status == 202

        # From here on, what the crawl processes publish and obey.
        first = _until(lambda: _pages_fetched(viewer), 60, "pages counted in /metrics")

        def throttled_row() -> dict | None:
            rows = {r["domain"]: r for r in viewer.get("/api/domains?limit=1000").json()["domains"]}
            row = rows.get(throttled)
            seen = row and row["responses_429"] > 0 and row["learned_delay"] > 0 and row["blocked_until"] is not None
            return row if fast in rows and seen else None

        _until(throttled_row, 60, "both hosts listed, the 429 host with its 429s, block and learned delay")

        _until(
            lambda: any(p["url"] == seeded for p in viewer.get(f"/api/pages?domain={fast}&limit=1000").json()["pages"]),
            30,
            "the seeded URL crawled",
        )

        assert admin.post(f"/api/domains/{throttled}/pause").status == 200
        time.sleep(2.0)  # two polls and the requests already in flight
        before = len(web.log("throttling"))
        time.sleep(3.0)
        assert len(web.log("throttling")) == before, "a paused domain was still fetched"
        assert admin.post(f"/api/domains/{throttled}/resume").status == 200

        assert _pages_fetched(viewer) > first
        audit = viewer.get(f"/api/domains/{throttled}/audit?minutes=10")
        assert audit.status == 200, audit.body
        assert audit.json()["summary"]
    finally:
        finish_cleanly(workers, logs)
        server.stop()

"""``scrapy serve`` as users start it, against a database holding what crawl processes write
(PostgreSQL with Redis: sessions and frontier in Redis; SQLite without): public and private
routes, roles, sessions, rate limits, controls written for the crawl processes, metrics,
and the OpenAPI description against the routes served."""

from __future__ import annotations

import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis
from argon2 import PasswordHasher
from prometheus_client.parser import text_string_to_metric_families

from crawler.api.routes import ROUTES
from crawler.redis.store import FrontierStore
from tests.api_contract import FAST_HOST, PAGES_PER_HOST, STORED_ONLY_HOST, THROTTLED_HOST, populate_as_a_crawl
from tests.api_server import ApiClient, ServeProcess, create_users, migrate
from tests.conftest import REDIS_URL, _fresh_database
from tests.helpers import ROOT, Database, crawl_environment, crawl_keys, forget_crawl, run_scrapy

pytestmark = pytest.mark.integration


class Served:
    def __init__(self, server: ServeProcess, database: Database, redis_crawl: str | None):
        self.server, self.database, self.redis_crawl = server, database, redis_crawl
        self.clients = 0

    def client(self, source: str | None = None) -> ApiClient:
        """A client of its own address unless told (anonymous calls, logins included, count per address)."""
        self.clients += 1
        return self.server.client(source or f"127.0.1.{self.clients}")


@pytest.fixture(
    scope="module",
    params=["sqlite", pytest.param("postgresql+redis", marks=[pytest.mark.postgres, pytest.mark.redis])],
)
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("serve")
    with _fresh_database(request.param.split("+")[0], folder) as database:
        migrate(database)
        create_users(database)
        settings = {"CRAWLER_API_METRICS_TOP_DOMAINS": "1"}
        crawl = None
        if request.param.endswith("redis"):
            crawl = f"test-api-{uuid.uuid4().hex[:8]}"
            settings["REDIS_URL"] = REDIS_URL
            FrontierStore(redis.Redis.from_url(REDIS_URL), crawl_keys(crawl)).push(
                FAST_HOST, 0, f"http://{FAST_HOST}/queued\t{{}}"
            )
        server = ServeProcess(database, folder / "serve.log", settings)
        populate_as_a_crawl(database, datetime.now(UTC))  # once serving: the samples' minutes are the latest ones
        try:
            yield Served(server, database, crawl)
        finally:
            server.stop()
            if crawl:
                forget_crawl(redis.Redis.from_url(REDIS_URL), crawl)


def test_health_and_stats_are_public_with_the_seed_alerts(served: Served) -> None:
    anonymous = served.client("127.0.0.21")
    health = anonymous.get("/health")
    assert health.status == 200
    assert health.json()["database"] == "ok"
    assert health.json()["redis"] == ("ok" if served.redis_crawl else "not configured")
    stats = anonymous.get("/api/stats").json()
    assert stats["totals"]["pages_fetched"] == 12 * 36 + 12 * 6  # both processes' last heartbeats
    assert stats["active_workers"] == 1
    assert stats["pages_per_second"] == pytest.approx(12 / 10, rel=0.01)  # the silent one fetched nothing since
    assert stats["success_rate"] == pytest.approx(0.75, abs=0.01)
    assert {a["name"] for a in stats["alerts"]} == {"high_error_rate", "frontier_backlog", "worker_crash"}
    assert next(a["message"] for a in stats["alerts"] if a["name"] == "worker_crash") == (
        "a worker has sent no heartbeat for over 120 s"  # which one, logged-in callers are told
    )
    assert stats["domains"]["blocked"] == 1
    crawl = stats["crawl"]
    assert (crawl["id"], crawl["running"], crawl["workers"], crawl["live_workers"]) == ("crawl-a", True, 2, 1)
    assert crawl["pages_fetched"] == 12 * 36 + 12 * 6
    assert crawl["pages_per_second"] == pytest.approx(12 / 10, rel=0.01)
    assert [c["id"] for c in stats["crawls"]] == ["crawl-a"] and stats["finished_workers"] == 0
    assert anonymous.get("/api/stats?crawl=nope").status == 404


@pytest.mark.parametrize("crawl", ["", "&crawl=crawl-a"])
def test_the_chart_has_intervals_aligned_on_its_step_and_a_nice_scale(served: Served, crawl: str) -> None:
    viewer = served.client().login("viewer")
    chart = viewer.get(f"/api/stats/timeseries?minutes=10&step=20{crawl}").json()
    # both processes at 1.2 pages/s (48 responses in 20 s) in the minute they ran together
    assert chart["scale"] == {"pages_per_second": 5.0, "responses": 50.0}
    assert len(chart["points"]) == 30 and all(p["at"] % 20 == 0 for p in chart["points"])
    assert viewer.get("/api/stats/timeseries?crawl=nope").status == 404


def test_everything_else_needs_a_session(served: Served) -> None:
    anonymous = served.client("127.0.0.22")
    for path in ("/api/domains", "/api/pages", "/api/stats/timeseries", "/api/frontier/stats", "/api/jobs"):
        assert anonymous.get(path).status == 401, path
    assert anonymous.post("/api/frontier/seed", {"urls": ["http://127.0.0.1:1/"]}).status == 401


def test_the_anonymous_tier_answers_429_with_retry_after_at_the_11th_request(served: Served) -> None:
    anonymous = served.client("127.0.0.23")
    answers = [anonymous.get("/api/stats") for _ in range(11)]
    assert [a.status for a in answers[:10]] == [200] * 10
    assert answers[10].status == 429
    assert 1 <= int(answers[10].headers["retry-after"]) <= 60
    assert served.client("127.0.0.24").get("/health").status == 200  # another client, its own window
    user = served.client("127.0.0.26").login("viewer")
    user.source = "127.0.0.23"
    assert user.get("/api/domains").status == 200  # from the same address, a user counts in a tier of its own


def test_login_sets_a_strict_httponly_cookie_and_logout_ends_the_session(served: Served) -> None:
    client = served.client()
    assert client.post("/api/auth/login", {"username": "viewer", "password": "wrong"}).status == 401
    assert client.post("/api/auth/login", {"username": "nobody", "password": "wrong"}).status == 401
    assert client.get("/api/auth/me").json() == {"username": None, "role": "anonymous"}
    reply = client.post("/api/auth/login", {"username": "viewer", "password": "viewer-password"})
    assert reply.status == 200 and reply.json() == {"username": "viewer", "role": "user"}
    cookie = reply.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Max-Age=86400" in cookie
    token = client.cookies["crawler_session"]
    assert len(token) >= 40
    assert client.get("/api/auth/me").json()["role"] == "user"
    client.post("/api/auth/logout")
    stolen = served.client()
    stolen.cookies["crawler_session"] = token
    assert stolen.get("/api/domains").status == 401


def test_a_user_reads_and_may_not_steer_an_admin_may(served: Served) -> None:
    viewer, admin = served.client().login("viewer"), served.client().login("admin")
    seed = {"urls": ["http://127.0.0.11:8001/seeded?utm_source=x", "ftp://nope/", "not a url"]}
    assert viewer.post("/api/frontier/seed", seed).status == 403
    assert viewer.request("PUT", f"/api/domains/{FAST_HOST}/limits", {"max_concurrency": 4}).status == 403
    assert viewer.post(f"/api/domains/{FAST_HOST}/pause").status == 403
    reply = admin.post("/api/frontier/seed", seed)
    assert reply.status == 202
    assert reply.json()["accepted"] == ["http://127.0.0.11:8001/seeded"]
    assert [r["url"] for r in reply.json()["rejected"]] == ["ftp://nope/", "not a url"]
    inbox = served.database.query(
        "SELECT url, added_by, taken_at FROM frontier_inbox WHERE url = ?", ("http://127.0.0.11:8001/seeded",)
    )
    assert inbox == [("http://127.0.0.11:8001/seeded", "admin", None)]
    assert admin.post("/api/frontier/seed", {"urls": ["nope"]}).status == 400
    actions = served.database.query("SELECT username, action FROM admin_actions WHERE action = 'frontier.seed'")
    assert actions == [("admin", "frontier.seed")]


def test_domains_show_delays_blocks_and_429s_sortable(served: Served) -> None:
    viewer = served.client().login("viewer")
    listed = viewer.get("/api/domains").json()
    assert listed["total"] == 3
    rows = {row["domain"]: row for row in listed["domains"]}
    assert rows.keys() == {FAST_HOST, THROTTLED_HOST, STORED_ONLY_HOST}
    throttled = rows[THROTTLED_HOST]
    assert 500 < throttled["blocked_for"] <= 600
    assert (throttled["learned_delay"], throttled["learned_floor"], throttled["responses_429"]) == (4.0, 2.0, 20)
    assert throttled["robots_delay"] == 0.5  # from the stored robots.txt, the snapshot had none
    assert rows[STORED_ONLY_HOST]["learned_delay"] == 1.5  # known only from the domains table
    for sort, first in (
        ("responses_429", THROTTLED_HOST),
        ("pages", FAST_HOST),
        ("delay", THROTTLED_HOST),
        ("queued", THROTTLED_HOST),
    ):
        assert viewer.get(f"/api/domains?sort={sort}").json()["domains"][0]["domain"] == first, sort
    ascending = [
        viewer.get(f"/api/domains?sort=pages&order=asc&limit=1&offset={n}").json()["domains"][0]["domain"]
        for n in range(3)
    ]
    assert ascending == [THROTTLED_HOST, FAST_HOST, STORED_ONLY_HOST]  # domains without a snapshot come last
    assert [d["domain"] for d in viewer.get("/api/domains?q=0.0.1&limit=5").json()["domains"]] == [
        FAST_HOST,
        THROTTLED_HOST,
        STORED_ONLY_HOST,
    ]
    assert viewer.get("/api/domains?q=0.13").json()["total"] == 1
    assert viewer.get("/api/domains?sort=evil;drop").status == 400
    robots = viewer.get(f"/api/domains/{THROTTLED_HOST}/robots").json()
    assert "Disallow: /private" in robots["robots_txt"]
    assert viewer.get("/api/domains/unknown.example/robots").status == 404


def test_pages_come_in_keyset_pages_filtered_by_domain_status_and_time(served: Served) -> None:
    viewer = served.client().login("viewer")
    seen, path = [], f"/api/pages?domain={THROTTLED_HOST}&limit=40"
    while path:
        reply = viewer.get(path).json()
        seen += reply["pages"]
        path = (
            f"/api/pages?domain={THROTTLED_HOST}&limit=40&cursor={reply['next_cursor']}"
            if reply["next_cursor"]
            else None
        )
    assert len(seen) == len({p["url"] for p in seen}) == PAGES_PER_HOST
    assert all(p["domain"] == THROTTLED_HOST for p in seen)
    assert [p["crawled_at"] for p in seen] == sorted((p["crawled_at"] for p in seen), reverse=True)
    errors = viewer.get("/api/pages?status=error&limit=1000").json()["pages"]
    assert len(errors) == 2 * PAGES_PER_HOST // 25 and {p["http_status"] for p in errors} == {500}
    since = seen[9]["crawled_at"].replace("+", "%2B")
    assert len(viewer.get(f"/api/pages?domain={THROTTLED_HOST}&since={since}").json()["pages"]) == 10
    assert viewer.get("/api/pages?cursor=garbage").status == 400
    assert viewer.get("/api/pages?status=unknown").status == 400
    assert viewer.get("/api/pages?limit=0").status == 400


def test_controls_are_written_for_the_crawl_processes(served: Served) -> None:
    admin = served.client().login("admin")
    reply = admin.request("PUT", f"/api/domains/{FAST_HOST}/limits", {"max_concurrency": 4, "min_delay": 0.1})
    assert reply.status == 200 and reply.json()["max_concurrency"] == 4
    assert admin.request("PUT", f"/api/domains/{FAST_HOST}/limits", {"max_concurrency": 0}).status == 400
    assert admin.post(f"/api/domains/{FAST_HOST}/pause").json()["paused"] is True
    row = served.database.query(
        "SELECT paused, max_concurrency, min_delay, updated_by FROM domain_controls WHERE domain = ?", (FAST_HOST,)
    )
    assert [(bool(r[0]), *r[1:]) for r in row] == [(True, 4, 0.1, "admin")]  # pausing kept the limits
    assert admin.request("DELETE", f"/api/domains/{FAST_HOST}/limits").json()["min_delay"] is None
    assert admin.post(f"/api/domains/{FAST_HOST}/resume").json()["paused"] is False
    assert admin.post("/api/domains/*/pause").status == 200
    assert served.client().login("viewer").get("/api/stats").json()["crawl_paused"] is True
    admin.post("/api/domains/*/resume")
    assert admin.post(f"/api/admin/domains/{THROTTLED_HOST}/reset").json()["reset_requested_at"]
    recorded = [a["action"] for a in admin.get("/api/admin/actions").json()["actions"]]
    assert recorded[:3] == ["domain.reset", "domain.resume", "domain.pause"]


def test_jobs_are_listed_and_a_running_one_cancelled(served: Served) -> None:
    viewer, admin = served.client().login("viewer"), served.client().login("admin")
    listed = {job["id"]: job for job in viewer.get("/api/jobs").json()["jobs"]}
    # the running job's counts are its two processes' latest heartbeats; the finished one's, its row's
    assert (listed["job-running"]["pages_fetched"], listed["job-running"]["pages_failed"]) == (8 * 42, 42)
    assert (listed["job-done"]["pages_fetched"], listed["job-done"]["pages_failed"]) == (0, 0)
    assert viewer.post("/api/jobs/job-running/cancel").status == 403
    assert admin.post("/api/jobs/job-done/cancel").status == 409
    assert admin.post("/api/jobs/nope/cancel").status == 404
    assert admin.post("/api/jobs/job-running/cancel").status == 202
    assert served.database.query("SELECT cancel_requested_at IS NOT NULL FROM crawl_jobs WHERE id = 'job-running'") in (
        [(True,)],
        [(1,)],
    )


def test_frontier_shows_redis_or_what_the_database_holds(served: Served) -> None:
    admin = served.client().login("admin")
    admin.post("/api/frontier/add", {"urls": ["http://127.0.0.12:8001/added"]})
    stats = admin.get("/api/frontier/stats").json()
    urls = admin.get(
        "/api/frontier/urls?limit=10" + (f"&crawl={served.redis_crawl}" if served.redis_crawl else "")
    ).json()
    if served.redis_crawl:
        assert stats["source"] == "redis" and stats["queued"] >= 1
        assert {
            "crawl": served.redis_crawl,
            "domain": FAST_HOST,
            "priority": 0,
            "url": f"http://{FAST_HOST}/queued",
        } in urls["urls"]
    else:
        assert stats["source"] == "database" and stats["inbox_pending"] >= 1
        assert "http://127.0.0.12:8001/added" in [u["url"] for u in urls["urls"]]
    assert admin.post("/api/frontier/recover").status == 200


def test_clearing_a_shared_crawl_drops_the_requests_it_spilled_to_the_database(served: Served) -> None:
    crawl = f"test-api-{uuid.uuid4().hex[:8]}"
    if not served.redis_crawl:  # no shared crawl to clear
        assert served.client().login("admin").request("DELETE", f"/api/frontier?crawl={crawl}").status == 400
        return
    client = redis.Redis.from_url(REDIS_URL)
    FrontierStore(client, crawl_keys(crawl)).push(FAST_HOST, 0, f"http://{FAST_HOST}/kept\t{{}}")
    served.database.query(
        "INSERT INTO frontier_spill (crawl_id, run, domain, priority, request) VALUES (?, 'r', ?, 0, ?) RETURNING id",
        (crawl, FAST_HOST, f"http://{FAST_HOST}/spilled\t{{}}"),
    )
    try:
        admin = served.client().login("admin")
        cleared = admin.request("DELETE", f"/api/frontier?crawl={crawl}")
        assert cleared.status == 200 and cleared.json()["spilled_dropped"] == 1, cleared.body
        assert served.database.query("SELECT COUNT(*) FROM frontier_spill WHERE crawl_id = ?", (crawl,)) == [(0,)]
    finally:
        forget_crawl(client, crawl)


def test_the_urls_of_a_shared_crawl_go_on_with_those_it_spilled(served: Served) -> None:
    if not served.redis_crawl:
        return  # a crawl of its own spills nothing
    crawl = f"test-api-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(REDIS_URL)
    FrontierStore(client, crawl_keys(crawl)).push(FAST_HOST, 0, f"http://{FAST_HOST}/kept\t{{}}")
    for priority, path in ((0, "low"), (5, "high")):
        served.database.query(
            "INSERT INTO frontier_spill (crawl_id, run, domain, priority, request) VALUES (?, 'r', ?, ?, ?) RETURNING id",
            (crawl, FAST_HOST, priority, f"http://{FAST_HOST}/{path}\t{{}}"),
        )
    try:
        admin = served.client().login("admin")
        pages, offset = [], 0
        while offset is not None:
            listed = admin.get(f"/api/frontier/urls?crawl={crawl}&limit=2&offset={offset}").json()
            pages.append([(u["url"].rsplit("/", 1)[1], u.get("spilled", False)) for u in listed["urls"]])
            offset = listed["next_offset"]
        assert pages == [[("kept", False), ("low", True)], [("high", True)]]  # spilled in that order
    finally:
        forget_crawl(client, crawl)
        served.database.query("DELETE FROM frontier_spill WHERE crawl_id = ? RETURNING id", (crawl,))


def test_metrics_parse_and_sum_the_processes(served: Served) -> None:
    text = served.client("127.0.0.25").get("/metrics").body.decode()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }
    assert samples[("crawler_pages_fetched_total", ())] == 12 * 42
    assert samples[("crawler_http_responses_total", (("status", "429"),))] == 3 * 42
    assert samples[("crawler_active_workers", ())] == 1
    assert samples[("crawler_blocked_domains", ())] == 1
    assert samples[("crawler_learned_delay_seconds_count", ())] == 2
    per_domain = {labels for (name, labels) in samples if name == "crawler_domain_pages_total"}
    assert per_domain == {(("domain", FAST_HOST),)}  # the busiest one only (CRAWLER_API_METRICS_TOP_DOMAINS=1)
    assert not any("url" in dict(labels) for _, labels in samples)


def test_the_openapi_description_matches_the_routes(served: Served) -> None:
    document = served.client().login("viewer").get("/openapi.json").json()
    described = {(method.upper(), path) for path, item in document["paths"].items() for method in item}
    assert described == {(r.method, r.path) for r in ROUTES}
    assert document["paths"]["/api/frontier/seed"]["post"]["x-role"] == "admin"
    assert "429" in document["paths"]["/api/pages"]["get"]["responses"]


def test_useradd_reads_the_password_on_standard_input(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'users.db'}")
    command = [sys.executable, "-m", "scrapy", "useradd", "carol", "admin", "-s", f"DATABASE_URL={database.url}"]
    done = subprocess.run(
        command,
        input="carol-password\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=crawl_environment(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    ((role, stored),) = database.query("SELECT role, password_hash FROM users WHERE username = 'carol'")
    assert role == "admin" and stored.startswith("$argon2id$") and "carol-password" not in stored
    assert PasswordHasher().verify(stored, "carol-password")


def test_an_address_it_cannot_listen_on_is_one_line_and_status_1(tmp_path: Path) -> None:
    taken = socket.create_server(("127.0.0.1", 0))
    try:
        port = taken.getsockname()[1]
        result = run_scrapy(Database(f"sqlite:///{tmp_path / 'crawler.db'}"), "serve", "--bind", f"127.0.0.1:{port}")
    finally:
        taken.close()
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(f"scrapy serve: cannot listen on 127.0.0.1:{port}: ")
    assert "address already in use" in result.stderr.lower()

"""``scrapy serve`` against what a hostile caller tries, as users start it (PostgreSQL with Redis,
and SQLite): state changes from another page of the same site, sessions of users changed or
gone, password guessing from a session or many addresses, clients behind a proxy, security
headers and HEAD, inputs that broke the server (deep JSON, NUL, long strings), Redis away,
what anonymous callers are told, and TLS."""

from __future__ import annotations

import datetime as dt
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from crawler.api.routes import ROUTES
from crawler.redis.keys import delete_matching
from tests.api_contract import FAST_HOST, THROTTLED_HOST, populate_as_a_crawl
from tests.api_server import ApiClient, ServeProcess, add_user, create_users, migrate
from tests.certificates import self_signed
from tests.conftest import REDIS_URL, _fresh_database
from tests.helpers import ROOT, Database, crawl_environment
from tests.throwaway_redis import ThrowawayRedis

pytestmark = pytest.mark.integration

PROXY = "127.0.9.1"
TRUSTED_PROXIES = "127.0.9.0/24"


class Served:
    def __init__(self, server: ServeProcess, database: Database, backend: str):
        self.server, self.database, self.backend = server, database, backend
        self.clients = 0

    def client(self, source: str | None = None) -> ApiClient:
        """A client of its own address unless told (anonymous calls, logins included, count per address)."""
        self.clients += 1
        return self.server.client(source or f"127.0.4.{self.clients}")

    def log(self) -> str:
        return self.server.log.read_text(errors="replace")


@pytest.fixture(
    scope="module",
    params=["sqlite", pytest.param("postgresql+redis", marks=[pytest.mark.postgres, pytest.mark.redis])],
)
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("security")
    with _fresh_database(request.param.split("+")[0], folder) as database:
        migrate(database)
        create_users(database)
        settings = {"CRAWLER_API_TRUSTED_PROXIES": TRUSTED_PROXIES}  # the defaults otherwise
        prefix = f"test-security-{uuid.uuid4().hex[:8]}"
        if request.param.endswith("redis"):
            settings |= {"REDIS_URL": REDIS_URL, "BOT_NAME": prefix}  # its sessions under keys of its own
        server = ServeProcess(database, folder / "serve.log", settings)
        populate_as_a_crawl(database, dt.datetime.now(dt.UTC))
        try:
            yield Served(server, database, request.param)
        finally:
            server.stop()
            if request.param.endswith("redis"):
                delete_matching(redis.Redis.from_url(REDIS_URL), f"{prefix}:*")


def _scrapy(database: Database, *args: str, password: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args, "-s", f"DATABASE_URL={database.url}"],
        input=f"{password}\n" if password is not None else "",
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=crawl_environment(),
        timeout=120,
    )


def _is_json_error(reply, status: int) -> bool:
    return (
        reply.status == status
        and reply.headers["content-type"].startswith("application/json")
        and isinstance(reply.json().get("error"), str)
    )


# --- state changes from another page ---------------------------------------------------------


def test_a_state_change_from_another_page_of_the_site_is_refused_and_changes_nothing(served: Served) -> None:
    admin = served.client().login("admin")
    other_port = "http://127.0.0.1:1"  # another port of the same host: same site, so the cookie goes
    seed = {"urls": ["http://127.0.0.11:8001/forged"]}
    refused = [
        admin.post("/api/frontier/seed", seed, headers={"Origin": other_port}),
        admin.post("/api/frontier/seed", seed, headers={"Sec-Fetch-Site": "same-site", "Origin": other_port}),
        admin.post("/api/frontier/seed", seed, headers={"Sec-Fetch-Site": "cross-site"}),
        admin.post("/api/domains/*/pause", headers={"Sec-Fetch-Site": "same-site"}),
        admin.post("/api/domains/*/pause", headers={"Origin": "null"}),
        admin.request("PUT", "/api/domains/*/limits", {"min_delay": 60}, headers={"Origin": other_port}),
        admin.request("DELETE", "/api/admin/pages?all=true", headers={"Origin": other_port}),
        admin.post("/api/jobs/job-running/cancel", headers={"Sec-Fetch-Site": "same-site"}),
    ]
    assert [r.status for r in refused] == [403] * len(refused), [r.body for r in refused]
    assert all(_is_json_error(r, 403) for r in refused)
    # what a form or a no-cors fetch can send, even from this origin
    unsafe = [
        admin.post("/api/frontier/seed", form={"urls": "http://127.0.0.11:8001/forged"}),
        admin.post("/api/domains/*/pause", data=b"x", headers={"Content-Type": "text/plain;charset=UTF-8"}),
        admin.post("/api/domains/*/pause", data=b"x"),  # a Blob without a type
        admin.post("/api/domains/*/pause", headers={"Content-Type": "application/x-www-form-urlencoded"}),
        admin.post(
            "/api/jobs/job-running/cancel", data=b"--b--", headers={"Content-Type": "multipart/form-data; boundary=b"}
        ),
    ]
    assert [r.status for r in unsafe] == [415] * len(unsafe), [r.body for r in unsafe]
    assert served.database.query("SELECT url FROM frontier_inbox WHERE url LIKE ?", ("%forged%",)) == []
    assert served.database.query("SELECT domain FROM domain_controls WHERE domain = '*'") == []
    assert served.database.query("SELECT id FROM crawl_jobs WHERE cancel_requested_at IS NOT NULL") == []
    assert served.database.query("SELECT COUNT(*) FROM pages")[0][0] > 0
    assert "from another origin" in served.log()


def test_the_dashboards_own_requests_and_programs_without_origin_pass(served: Served) -> None:
    admin = served.client().login("admin")
    own = served.server.url
    domain = "127.0.0.14:8001"
    assert (
        admin.post(f"/api/domains/{domain}/pause", headers={"Sec-Fetch-Site": "same-origin", "Origin": own}).status
        == 200
    )
    assert admin.post(f"/api/domains/{domain}/resume", headers={"Origin": own}).status == 200  # an older browser
    assert admin.post(f"/api/domains/{domain}/pause").status == 200  # curl: neither header
    reply = admin.post("/api/frontier/seed", {"urls": [f"http://{domain}/a"]}, headers={"Origin": own})
    assert reply.status == 202
    charset = admin.post(
        "/api/frontier/seed",
        data=b'{"urls": ["http://127.0.0.14:8001/b"]}',
        headers={"Content-Type": "application/json; charset=not-a-charset"},  # JSON is UTF-8 whatever it says
    )
    assert charset.status == 202, charset.body


def test_logging_in_from_another_page_is_refused(served: Served) -> None:
    client = served.client()
    body = {"username": "viewer", "password": "viewer-password"}
    assert client.post("/api/auth/login", body, headers={"Sec-Fetch-Site": "same-site"}).status == 403
    assert client.post("/api/auth/login", form=body).status == 415
    assert "crawler_session" not in client.cookies
    assert client.post("/api/auth/login", body, headers={"Sec-Fetch-Site": "same-origin"}).status == 200


# --- sessions --------------------------------------------------------------------------------


def test_a_session_follows_its_users_role_and_ends_with_its_password_or_the_user(served: Served) -> None:
    name = f"dana-{served.backend[:6]}"
    first, second = "first-password", "second-password"
    assert _scrapy(served.database, "useradd", name, "admin", password=first).returncode == 0
    session = served.client().login(name, first)
    assert session.get("/api/admin/actions").status == 200

    demoted = _scrapy(served.database, "useradd", name, "user", password=first)  # the same password
    assert demoted.returncode == 0, demoted.stderr
    assert session.get("/api/admin/actions").status == 403  # at once: the role is read at each request
    assert session.get("/api/domains").status == 200  # and the session lives on
    assert session.get("/api/auth/me").json() == {"username": name, "role": "user"}

    assert _scrapy(served.database, "useradd", name, "user", password=second).returncode == 0
    assert session.get("/api/domains").status == 401  # a new password ends every session

    session.login(name, second)
    other = served.client().login(name, second)
    ended = _scrapy(served.database, "userdel", "--sessions-only", name)
    assert ended.returncode == 0, ended.stderr
    assert session.get("/api/domains").status == 401 and other.get("/api/domains").status == 401
    session.login(name, second)  # the user stays
    assert session.get("/api/domains").status == 200

    stolen = session.cookies["crawler_session"]
    deleted = _scrapy(served.database, "userdel", name)
    assert deleted.returncode == 0, deleted.stderr
    assert session.get("/api/domains").status == 401
    assert served.client().post("/api/auth/login", {"username": name, "password": second}).status == 401
    assert served.database.query("SELECT username FROM users WHERE username = ?", (name,)) == []
    assert served.database.query("SELECT username FROM sessions WHERE username = ?", (name,)) == []

    # a user of the same name made again: the old sessions stay ended
    assert _scrapy(served.database, "useradd", name, "admin", password=second).returncode == 0
    revived = served.client()
    revived.cookies["crawler_session"] = stolen
    assert revived.get("/api/domains").status == 401

    unknown = _scrapy(served.database, "userdel", "nobody-at-all")
    assert unknown.returncode == 1 and "no user nobody-at-all" in unknown.stderr


# --- guessing passwords ----------------------------------------------------------------------


def test_logging_in_counts_by_address_in_the_anonymous_tier_whatever_session_comes_with_it(served: Served) -> None:
    viewer = served.client("127.0.5.1").login("viewer")
    attempts = [
        viewer.post("/api/auth/login", {"username": f"guess-{n}", "password": "wrong"}) for n in range(10)
    ]  # the login above was the first of the address's ten
    statuses = [a.status for a in attempts]
    assert statuses == [401] * 9 + [429], statuses
    assert "anonymous tier" in attempts[-1].json()["error"]
    assert viewer.get("/api/domains").status == 200  # the session's own tier is another count


def test_failed_logins_of_one_account_are_throttled_from_any_address_and_logged(served: Served) -> None:
    name = f"erin-{served.backend[:6]}"
    add_user(served.database, name, "user", "erin-password")
    guesser = served.client("127.0.6.1").login("viewer")  # a logged-in session guessing another's password
    answers = []
    for n in range(11):
        guesser.source = f"127.0.6.{n + 2}"  # a new address each time: no address tier stops it
        answers.append(guesser.post("/api/auth/login", {"username": name, "password": f"guess {n}"}))
    assert [a.status for a in answers] == [401] * 10 + [429]
    assert 890 <= int(answers[-1].headers["retry-after"]) <= 900
    right = served.client("127.0.6.30").post("/api/auth/login", {"username": name, "password": "erin-password"})
    assert right.status == 429  # the right password too: the answer tells nothing of the guess
    assert served.client("127.0.6.31").post("/api/auth/login", {"username": "viewer", "password": "x"}).status == 401
    log = served.log()
    assert len(re.findall(rf"failed login as '{name}' from 127\.0\.6\.\d+", log)) == 10
    assert f"failed login as '{name}' from 127.0.6.11" in log
    assert f"login as '{name}' from 127.0.6.30 refused: too many failed logins" in log


def test_a_successful_login_is_not_counted_as_a_failure(served: Served) -> None:
    name = f"fay-{served.backend[:6]}"
    add_user(served.database, name, "user", "fay-password")
    for n in range(12):
        served.client(f"127.0.7.{n + 1}").login(name, "fay-password")


def test_behind_a_trusted_proxy_each_client_has_its_own_budget(served: Served) -> None:
    def via_proxy(client_address: str) -> int:
        return served.client(PROXY).get("/api/stats", headers={"X-Forwarded-For": client_address}).status

    assert [via_proxy("198.51.100.1") for _ in range(11)] == [200] * 10 + [429]
    assert via_proxy("198.51.100.2") == 200  # another client behind the same proxy
    assert via_proxy("203.0.113.9, 198.51.100.2") == 200  # what a client wrote itself is not believed
    forger = "127.0.8.1"  # not a trusted proxy: its header is not believed
    statuses = [
        served.client(forger).get("/api/stats", headers={"X-Forwarded-For": f"198.51.100.{n + 100}"}).status
        for n in range(11)
    ]
    assert statuses == [200] * 10 + [429]
    served.client(PROXY).post(
        "/api/auth/login", {"username": "viewer", "password": "wrong"}, headers={"X-Forwarded-For": "198.51.100.3"}
    )
    assert "failed login as 'viewer' from 198.51.100.3" in served.log()


# --- headers, HEAD ---------------------------------------------------------------------------


def test_every_answer_carries_the_security_headers_and_no_server_version(served: Served) -> None:
    viewer = served.client().login("viewer")
    anonymous = served.client()
    answers = {
        "dashboard": anonymous.get("/"),
        "script": anonymous.get("/static/app.js"),
        "style": anonymous.get("/static/style.css"),
        "icon": anonymous.get("/static/favicon.svg"),
        "public JSON": anonymous.get("/api/stats"),
        "metrics": anonymous.get("/metrics"),
        "private JSON": viewer.get("/api/domains"),
        "401": anonymous.get("/api/domains"),
        "404": viewer.get("/no/such/page"),
        "404 file": anonymous.get("/static/nope.js"),
        "405": viewer.request("DELETE", "/health"),
        "400": viewer.get("/api/pages?limit=0"),
        "403": viewer.post("/api/frontier/seed", {"urls": ["http://127.0.0.11:8001/"]}),
        "415": viewer.post("/api/auth/logout", data=b"x", headers={"Content-Type": "text/plain"}),
    }
    for name, reply in answers.items():
        headers = reply.headers
        csp = headers.get("content-security-policy", "")
        assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp and "script-src 'self'" in csp, name
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp, name
        assert headers.get("x-frame-options") == "DENY", name
        assert headers.get("x-content-type-options") == "nosniff", name
        assert headers.get("referrer-policy") == "no-referrer", name
        assert headers.get("server") == "crawler", (name, headers.get("server"))
    for name in ("public JSON", "metrics", "private JSON", "401", "404", "405", "400", "403", "415"):
        assert answers[name].headers["cache-control"] == "no-store", name
    for name in ("dashboard", "script", "style", "icon"):
        assert answers[name].headers["cache-control"] == "no-cache", name
    assert [answers[n].status for n in ("404", "405", "400", "403", "415")] == [404, 405, 400, 403, 415]
    assert [answers[n].status for n in ("dashboard", "script", "public JSON", "metrics", "private JSON")] == [200] * 5


def _example_path(path: str) -> str:
    return path.replace("{domain}", THROTTLED_HOST).replace("{name}", "app.js")


def test_head_answers_every_get_route_as_get_would_without_a_body(served: Served) -> None:
    admin = served.client().login("admin")
    for route in ROUTES:
        if route.method != "GET":
            continue
        path = _example_path(route.path)
        got, head = admin.get(path), admin.request("HEAD", path)
        assert head.status == got.status, (path, head.status, got.status)
        assert head.body == b"", path
        assert head.headers["content-type"] == got.headers["content-type"], path
        assert "content-security-policy" in head.headers, path
    assert served.client().request("HEAD", "/api/domains").status == 401  # the role check holds


# --- bad input -------------------------------------------------------------------------------


def test_inputs_that_broke_the_server_answer_json_4xx(served: Served) -> None:
    anonymous = served.client()
    nested = [
        anonymous.post("/api/auth/login", data=b"[" * 100_000, headers={"Content-Type": "application/json"}),
        anonymous.post("/api/auth/login", data=b'{"a":' * 50_000, headers={"Content-Type": "application/json"}),
        anonymous.post("/api/auth/login", {"username": "vie\x00wer", "password": "viewer-password"}),
        anonymous.post("/api/auth/login", {"username": "viewer", "password": "pass\x00word"}),
        anonymous.post("/api/auth/login", data=b"\xff\xfe{", headers={"Content-Type": "application/json"}),
    ]
    assert [r.status for r in nested] == [400] * len(nested), [r.body[:200] for r in nested]
    assert all(_is_json_error(r, 400) for r in nested)
    admin = served.client().login("admin")
    long_domain = "d" * 256
    bad = [
        admin.post("/api/domains/bad%00domain/pause"),
        admin.request("PUT", "/api/domains/bad%00domain/limits", {"min_delay": 1}),
        admin.get("/api/domains/bad%00domain/robots"),
        admin.get("/api/domains/bad%00domain/audit"),
        admin.get(f"/api/domains/{long_domain}/robots"),
        admin.post(f"/api/domains/{long_domain}/pause"),
        admin.post("/api/jobs/job%00running/cancel"),
        admin.post(f"/api/jobs/{'j' * 65}/cancel"),
        admin.post("/api/frontier/seed", {"urls": ["http://127.0.0.11:8001/s"], "spider": "s" * 65}),
        admin.post("/api/frontier/add", {"urls": ["http://127.0.0.11:8001/s"], "spider": "links\x00"}),
        admin.post("/api/frontier/add", {"urls": ["http://127.0.0.11:8001/s"], "crawl": "c" * 256}),
        admin.post("/api/frontier/add", {"urls": ["http://127.0.0.11:8001/s"], "crawl": 7}),
        admin.get("/api/pages?domain=a%00b"),
        admin.get("/api/stats?crawl=a%00b"),
    ]
    assert [r.status for r in bad] == [400] * len(bad), [r.body[:200] for r in bad]
    assert all(_is_json_error(r, 400) for r in bad)
    assert served.database.query("SELECT url FROM frontier_inbox WHERE url LIKE ?", ("%/s",)) == []
    assert "Traceback" not in served.log()


# --- what anonymous callers are told ---------------------------------------------------------

PROCESS_NAMES = ("testhost", "4242", "job-running", "w-live", "w-silent")
"""The host, PID, job and worker ids of the crawl processes ``populate_as_a_crawl`` writes."""


def test_anonymous_callers_are_told_no_host_pid_job_nor_domain(served: Served) -> None:
    anonymous = served.client()
    stats = anonymous.get("/api/stats")
    assert stats.status == 200 and stats.json()["totals"]["pages_fetched"] > 0
    for name in PROCESS_NAMES:
        assert name not in stats.body.decode(), name
    assert {a["name"] for a in stats.json()["alerts"]} >= {"worker_crash"}
    metrics = anonymous.get("/metrics").body.decode()
    assert "crawler_pages_fetched_total" in metrics
    for domain in (FAST_HOST, THROTTLED_HOST):
        assert domain not in metrics, domain  # CRAWLER_API_METRICS_TOP_DOMAINS is 0 by default
    health = anonymous.get("/health").json()
    assert {health["database"], health["redis"]} <= {"ok", "unavailable", "not configured"}
    viewer = served.client().login("viewer").get("/api/stats").body.decode()
    for name in PROCESS_NAMES:
        assert name in viewer, name  # logged-in users keep them


# --- Redis away ------------------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.redis
def test_every_call_that_needs_redis_answers_503_while_it_is_away(tmp_path: Path) -> None:
    own_redis = ThrowawayRedis(tmp_path / "redis", persistent=False)
    own_redis.start()
    with _fresh_database("postgresql", tmp_path) as database:
        migrate(database)
        create_users(database)
        server = ServeProcess(database, tmp_path / "serve.log", {"REDIS_URL": own_redis.url})
        try:
            admin = server.client("127.0.3.1").login("admin")
            assert admin.get("/api/frontier/stats").status == 200
            own_redis.stop()
            answers = {
                "session": admin.get("/api/auth/me"),
                "frontier": admin.get("/api/frontier/urls"),
                "seed": admin.post("/api/frontier/seed", {"urls": ["http://127.0.0.11:8001/"]}),
                "login": server.client("127.0.3.2").post(
                    "/api/auth/login", {"username": "admin", "password": "admin-password"}
                ),
                "stats": server.client("127.0.3.3").get("/api/stats"),
                "health": server.client("127.0.3.4").get("/health"),
            }
            for name, reply in answers.items():
                assert _is_json_error(reply, 503) or (name == "health" and reply.status == 503), (name, reply.body)
                assert str(own_redis.port) not in reply.body.decode(), (name, reply.body)
            assert answers["health"].json()["redis"] == "unavailable"
        finally:
            own_redis.stop()
            log = server.stop()  # no traceback in the log
    assert f"127.0.0.1:{own_redis.port}" in log  # the operator is told where


# --- TLS -------------------------------------------------------------------------------------


def test_tls_serves_https_and_the_cookie_is_secure(tmp_path: Path) -> None:
    certfile, keyfile, trusting = self_signed(tmp_path)
    with _fresh_database("sqlite", tmp_path) as database:
        migrate(database)
        create_users(database)
        server = ServeProcess(
            database,
            tmp_path / "serve.log",
            options=["--certfile", str(certfile), "--keyfile", str(keyfile)],
            tls=trusting,
        )
        try:
            client = server.client()
            reply = client.post("/api/auth/login", {"username": "viewer", "password": "viewer-password"})
            assert reply.status == 200
            assert "Secure" in reply.headers["set-cookie"] and "HttpOnly" in reply.headers["set-cookie"]
            assert client.get("/api/domains").status == 200
            assert client.post("/api/auth/logout", headers={"Origin": server.url}).status == 200
        finally:
            log = server.stop()
    assert f"scrapy serve: https://127.0.0.1:{server.port}/" in log

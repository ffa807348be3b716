"""``scrapy serve`` against what a hostile caller tries, as users start it (PostgreSQL with Redis,
and SQLite): sessions of users changed or gone."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest
import redis

from crawler.redis.keys import delete_matching
from tests.api_contract import populate_as_a_crawl
from tests.api_server import ApiClient, ServeProcess, create_users, migrate
from tests.conftest import REDIS_URL, _fresh_database
from tests.helpers import ROOT, Database, crawl_environment

pytestmark = pytest.mark.integration


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
        settings: dict[str, str] = {}
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

"""``scrapy serve`` started as users start it, and a small HTTP client for it (cookies, JSON,
a source address of its own so that each client is a distinct anonymous caller)."""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from crawler.api.auth import save_user
from crawler.storage import open_backend
from tests.helpers import ROOT, Database, crawl_environment

PASSWORDS = {"viewer": "viewer-password", "admin": "admin-password"}


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class ApiClient:
    def __init__(
        self, port: int, source: str = "127.0.0.1", host: str = "127.0.0.1", tls: ssl.SSLContext | None = None
    ):
        self.port = port
        self.source = source
        self.host = host
        self.tls = tls
        self.cookies: dict[str, str] = {}

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        form: dict[str, str] | None = None,
        data: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """``body`` as JSON, ``form`` as a form, or ``data`` as it is (with its type in ``headers``)."""
        headers = dict(headers or {})
        if form is not None:
            data, headers["Content-Type"] = urlencode(form).encode(), "application/x-www-form-urlencoded"
        elif body is not None:
            data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        connection = (
            http.client.HTTPSConnection(
                self.host, self.port, timeout=30, source_address=(self.source, 0), context=self.tls
            )
            if self.tls
            else http.client.HTTPConnection(self.host, self.port, timeout=30, source_address=(self.source, 0))
        )
        try:
            connection.request(method, path, data, headers)
            response = connection.getresponse()
            reply = Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
            for header in response.headers.get_all("Set-Cookie") or []:
                for name, morsel in SimpleCookie(header).items():
                    if morsel.value:
                        self.cookies[name] = morsel.value
                    else:
                        self.cookies.pop(name, None)
            return reply
        finally:
            connection.close()

    def get(self, path: str, **kwargs: Any) -> Reply:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, body: Any = None, **kwargs: Any) -> Reply:
        return self.request("POST", path, body, **kwargs)

    def login(self, username: str, password: str | None = None) -> ApiClient:
        reply = self.post("/api/auth/login", {"username": username, "password": password or PASSWORDS[username]})
        assert reply.status == 200, reply.body
        return self


def create_users(database: Database) -> None:
    """A ``user`` named viewer and an ``admin`` named admin (scrapy useradd is tested on its own)."""
    add_user(database, "viewer", "user", PASSWORDS["viewer"])
    add_user(database, "admin", "admin", PASSWORDS["admin"])


def add_user(database: Database, username: str, role: str, password: str) -> None:
    async def create() -> None:
        db = open_backend(database.url)
        await db.open()
        try:
            await save_user(db, username, role, password)
        finally:
            await db.close()

    _run(create)


def migrate(database: Database) -> None:
    """Bring the database to the schema (as ``scrapy serve`` or a crawl would on start)."""

    async def open_close() -> None:
        backend = open_backend(database.url)
        await backend.open()
        await backend.close()

    _run(open_close)


def _run(function: Callable[[], Coroutine[Any, Any, None]]) -> None:
    # In a thread of its own: the browser test's Playwright keeps an event loop in this one.
    with ThreadPoolExecutor(1) as executor:
        executor.submit(lambda: asyncio.run(function())).result()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ServeProcess:
    def __init__(
        self,
        database: Database,
        log: Path,
        settings: dict[str, str] | None = None,
        options: list[str] | None = None,
        tls: ssl.SSLContext | None = None,
    ):
        """``options`` go to ``scrapy serve`` as they are; ``tls`` is the clients' context for
        a server started with ``--certfile`` and ``--keyfile``."""
        self.port = free_port()
        self.tls = tls
        command = [
            sys.executable,
            "-m",
            "scrapy",
            "serve",
            "--bind",
            f"127.0.0.1:{self.port}",
            "-s",
            f"DATABASE_URL={database.url}",
        ]
        for name, value in (settings or {}).items():
            command += ["-s", f"{name}={value}"]
        command += options or []
        self.log = log
        with log.open("wb") as output:
            self.process = subprocess.Popen(
                command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT, env=crawl_environment()
            )
        self._wait_listening()

    def _wait_listening(self, timeout: float = 30) -> None:
        # The announcement line, not a request: the anonymous rate limit must stay untouched.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"scrapy serve exited: {self.log.read_text()[-3000:]}")
            if "scrapy serve: http" in self.log.read_text(errors="replace"):
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"scrapy serve did not start: {self.log.read_text()[-3000:]}")

    def client(self, source: str = "127.0.0.1") -> ApiClient:
        return ApiClient(self.port, source, tls=self.tls)

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.terminate()  # our own process, by its PID
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        output = self.log.read_text(errors="replace")
        assert "Traceback" not in output, output[-5000:]
        return output

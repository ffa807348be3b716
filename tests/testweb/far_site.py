"""An HTTPS site far away as the crawler sees it: every new connection's TLS handshake waits
``handshake_wait`` seconds before the server answers the ClientHello (the round trips of a
distant server), while kept-alive connections carry requests at once. ``/`` links to ``/a``
and ``/b``; the first ``refusals`` of them asked for are answered 429 with ``Retry-After`` after
``refusal_wait`` seconds, every later page 200 after ``page_wait``; robots.txt is 404.
Threads of the test process, one loopback address; logs every request (``log``: path, status,
when it was read, when its answer was sent) and counts the connections (``connections``)."""

from __future__ import annotations

import socket
import socketserver
import ssl
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tests.certificates import self_signed
from tests.testweb.threaded import ThreadedServer

PAGES = ("/a", "/b")


@dataclass(frozen=True)
class Waits:
    handshake: float = 0.0
    refusal: float = 0.0
    page: float = 0.0


@dataclass(frozen=True)
class Logged:
    path: str
    status: int
    read_at: float
    answered_at: float


class FarSite(ThreadedServer):
    def __init__(self, folder: Path, address: str, retry_after: int, waits: Waits, refusals: int = 1):
        certfile, keyfile, _ = self_signed(folder, address)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certfile, keyfile)
        self.log: list[Logged] = []
        self.connections = 0
        self.retry_after, self.waits = retry_after, waits
        self._refusals_left = refusals
        self._lock = threading.Lock()
        super().__init__(address, type("Handler", (_Handler,), {"site": self, "context": context}))

    def url(self, path: str = "/") -> str:
        return f"https://{self.address}:{self.port}{path}"

    def status(self, path: str) -> int:
        with self._lock:
            if path in PAGES and self._refusals_left:
                self._refusals_left -= 1
                return 429
            return 404 if path == "/robots.txt" else 200


class _Handler(socketserver.BaseRequestHandler):
    site: FarSite
    context: ssl.SSLContext

    def handle(self) -> None:
        site = self.site
        with site._lock:
            site.connections += 1
        time.sleep(site.waits.handshake)
        try:
            with self.context.wrap_socket(self.request, server_side=True) as tls:
                tls.settimeout(30)
                reader = tls.makefile("rb")
                while (line := reader.readline()) and line.strip():
                    read_at, path = time.time(), line.split()[1].decode()
                    while reader.readline().strip():  # the request's headers
                        pass
                    status = site.status(path)
                    time.sleep(site.waits.refusal if status == 429 else site.waits.page if path in PAGES else 0)
                    self._reply(tls, status, path)
                    site.log.append(Logged(path, status, read_at, time.time()))
        except (OSError, IndexError):
            pass  # the client went away, or sent no HTTP

    def _reply(self, tls: socket.socket, status: int, path: str) -> None:
        if status == 429:
            head, body = f"429 Too Many Requests\r\nRetry-After: {self.site.retry_after}", b"slow down"
        elif status == 404:
            head, body = "404 Not Found", b""
        elif path == "/":
            head, body = "200 OK", "".join(f'<a href="{page}">{page}</a>' for page in PAGES).encode()
        else:
            head, body = "200 OK", f"<html><title>{path}</title></html>".encode()
        tls.sendall(
            f"HTTP/1.1 {head}\r\nContent-Type: text/html\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
        )

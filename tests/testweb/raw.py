"""A server for what twisted.web cannot be made to send: headers without end, a chunked body
without end, a body at one byte a second, a reset, a reply that is not HTTP, plain HTTP to a
TLS handshake. Runs in threads of the test process, on one loopback address; logs every
request it reads (``log``)."""

from __future__ import annotations

import socket
import socketserver
import struct
import time

from tests.testweb.threaded import ThreadedServer

ROBOTS = b"User-agent: *\nDisallow:\n"
CASES = ["/endless-headers", "/endless-chunked", "/slow-body", "/reset", "/no-http", "/hang-up"]
TLS_CASE = "/tls-to-plain"


class RawServer(ThreadedServer):
    def __init__(self, address: str = "127.0.0.1"):
        self.log: list[tuple[str, float]] = []
        super().__init__(address, type("Handler", (_Handler,), {"server_log": self.log}))

    @property
    def base(self) -> str:
        return f"http://{self.address}:{self.port}"

    def paths(self) -> list[str]:
        return [path for path, _ in self.log]


class _Handler(socketserver.BaseRequestHandler):
    server_log: list[tuple[str, float]]

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(30)
        try:
            first = sock.recv(1, socket.MSG_PEEK)
            if first == b"\x16":  # a TLS ClientHello: answer in plain HTTP
                self.server_log.append((TLS_CASE, time.time()))
                sock.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            path = _request_path(sock)
            if path is None:
                return
            self.server_log.append((path, time.time()))
            name = path.strip("/").replace("-", "_").replace(".", "_") or "index"
            getattr(self, "_" + name, self._not_found)(sock)
        except OSError:
            pass  # the client went away: what most of these cases end with

    def _robots_txt(self, sock: socket.socket) -> None:
        _reply(sock, 200, ROBOTS, "text/plain")

    def _index(self, sock: socket.socket) -> None:
        host, port = sock.getsockname()[:2]
        links = [*CASES, f"https://{host}:{port}{TLS_CASE}"]
        body = "<html><head><title>Raw cases</title></head><body>" + "".join(f'<a href="{h}">{h}</a>' for h in links)
        _reply(sock, 200, (body + "</body></html>").encode(), "text/html")

    def _not_found(self, sock: socket.socket) -> None:
        _reply(sock, 404, b"not found", "text/plain")

    def _endless_headers(self, sock: socket.socket) -> None:
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n")
        line = b"X-Filler-%d: " + b"a" * 1000 + b"\r\n"
        for n in range(10**9):
            sock.sendall(line % n)

    def _endless_chunked(self, sock: socket.socket) -> None:
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n%s\r\n" % (65536, b"<p>" + b"x" * 65533)
        while True:
            sock.sendall(chunk)

    def _slow_body(self, sock: socket.socket) -> None:
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n")
        for _ in range(1000):
            sock.sendall(b"x")
            time.sleep(1)

    def _reset(self, sock: socket.socket) -> None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # with a zero linger time: a reset, not an orderly close

    def _no_http(self, sock: socket.socket) -> None:
        sock.sendall(b"SSH-2.0-OpenSSH_9.6p1 Debian-3\r\n")

    def _hang_up(self, sock: socket.socket) -> None:
        pass  # closes without a byte


def _request_path(sock: socket.socket) -> str | None:
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        chunk = sock.recv(4096)
        if not chunk:
            return None
        data += chunk
    parts = data.split(b"\r\n", 1)[0].split()
    return parts[1].decode("latin-1") if len(parts) == 3 else None


def _reply(sock: socket.socket, status: int, body: bytes, content_type: str) -> None:
    head = f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    sock.sendall(head.encode() + body)

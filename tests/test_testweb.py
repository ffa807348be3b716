"""The test web's own log is the judge of politeness: a request's start is when its bytes
reached the machine, even when the server reads them late."""

from __future__ import annotations

import os
import signal
import socket
import time

import pytest

from tests.testweb import TestWeb

pytestmark = pytest.mark.integration

HELD = 0.5


def test_a_request_read_late_is_logged_when_it_arrived() -> None:
    with TestWeb({"plain": "paced:pages=3"}, first_address=140) as web:
        address = web.addresses["plain"]
        os.kill(web.pid, signal.SIGSTOP)  # the server, our own child, cannot read for a while
        try:
            with socket.create_connection((address, web.port), timeout=5) as client:
                sent_at = time.time()
                client.sendall(f"GET /p/1 HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n".encode())
                time.sleep(HELD)
                os.kill(web.pid, signal.SIGCONT)
                assert client.recv(100).startswith(b"HTTP/1.1 200")
        finally:
            os.kill(web.pid, signal.SIGCONT)
        (entry,) = web.log("plain")
    assert sent_at <= entry.start < sent_at + 0.05, entry.start - sent_at  # not HELD later
    assert entry.end >= sent_at + HELD

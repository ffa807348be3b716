"""A TCP server in threads of the test process, on one loopback address and a free port, for
the test servers that speak what twisted.web cannot be made to (``raw``, ``far_site``)."""

from __future__ import annotations

import socketserver
import threading
from typing import Any, Self


class ThreadedServer:
    __test__ = False

    def __init__(self, address: str, handler: type[socketserver.BaseRequestHandler]):
        self._server = socketserver.ThreadingTCPServer((address, 0), handler)
        self._server.daemon_threads = True
        self.address, self.port = self._server.server_address[:2]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

"""A TCP proxy on loopback that can stop forwarding without closing anything: while it is a
black hole, connections are accepted and bytes are read but nothing is passed on and nothing
answers, as when a network drops packets (a refused connection would be an easy outage).
When it forwards again, the connections that lived through the silence are closed (their
bytes were swallowed, as a peer that gave up would find) and new ones are forwarded."""

from __future__ import annotations

import socket
import threading


class BlackholeProxy:
    def __init__(self, target: tuple[str, int]):
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._forwarding = threading.Event()
        self._forwarding.set()
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._stopped = False
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> BlackholeProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped = True
        self._listener.close()
        self._close_all()

    def blackhole(self) -> None:
        self._forwarding.clear()

    def forward(self) -> None:
        self._close_all()
        self._forwarding.set()

    def _close_all(self) -> None:
        with self._lock:
            sockets, self._open = self._open, []
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._connect, args=(client,), daemon=True).start()

    def _connect(self, client: socket.socket) -> None:
        with self._lock:
            self._open.append(client)
        self._forwarding.wait()  # a connection made during the silence hears nothing either
        try:
            upstream = socket.create_connection(self.target, timeout=5)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        with self._lock:
            self._open.append(upstream)
        for source, sink in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                if self._forwarding.is_set():
                    sink.sendall(data)
                # else: swallowed, no answer
        except OSError:
            pass
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

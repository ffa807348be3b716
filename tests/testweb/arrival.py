"""When a request reached the test web: the kernel's receive time of its bytes (SO_TIMESTAMPNS),
not the moment the server process got round to reading them. On a busy machine the server may
read a request many milliseconds after it arrived; a gap between two arrivals measured at the
read would then be shorter than the gap on the wire, and a polite crawler would look impolite."""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from twisted.internet import main, tcp

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux
_TIMESPEC = struct.Struct("qq")


class TimestampedServer(tcp.Server):
    """A server connection that notes when the bytes of its latest read arrived."""

    def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any):
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        super().__init__(sock, *args, **kwargs)
        self.received_at = time.time()

    def doRead(self) -> Any:
        try:
            data, ancillary, _, _ = self.socket.recvmsg(self.bufferSize, socket.CMSG_SPACE(_TIMESPEC.size))
        except BlockingIOError:
            return None
        except OSError:
            return main.CONNECTION_LOST
        for level, kind, value in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                seconds, nanoseconds = _TIMESPEC.unpack(value[: _TIMESPEC.size])
                self.received_at = seconds + nanoseconds / 1e9
        return self._dataReceived(data)


class TimestampedPort(tcp.Port):
    transport = TimestampedServer

    def createInternetSocket(self) -> socket.socket:
        # On the listening socket too: the kernel stamps packets only once some socket asks,
        # and a request may arrive before the server has accepted its connection.
        sock = super().createInternetSocket()
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        return sock


def received_at(transport: Any) -> float:
    """When the request just read arrived (now, for a transport that does not know)."""
    return getattr(transport, "received_at", None) or time.time()

"""What a process holds, read from ``/proc``: resident memory, open file descriptors, and its
TCP connections to a given port (its database or Redis connections)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class ProcessSample:
    at: float
    """Seconds after the run's start."""
    rss_mb: float
    fds: int
    connections: dict[int, int]
    """Established TCP connections by remote port."""


def sample(pid: int, at: float, ports: tuple[int, ...]) -> ProcessSample | None:
    """``pid``'s figures now; None when it has gone."""
    fd_dir = Path(f"/proc/{pid}/fd")
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        names = os.listdir(fd_dir)
    except (FileNotFoundError, ProcessLookupError):
        return None
    links = []
    for name in names:
        try:
            links.append(os.readlink(fd_dir / name))
        except FileNotFoundError:
            pass  # closed since the listing: the process lives on
    rss = [int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")]
    if not rss:
        return None  # exited, not yet reaped: a zombie has no memory of its own
    rss_kb = rss[0]
    sockets = {link[8:-1] for link in links if link.startswith("socket:[")}
    return ProcessSample(at, rss_kb / 1024, len(links), _connections(pid, sockets, ports))


def _connections(pid: int, inodes: set[str], ports: tuple[int, ...]) -> dict[int, int]:
    counts = dict.fromkeys(ports, 0)
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            established = fields[3] == "01"
            if established and remote_port in counts and fields[9] in inodes:
                counts[remote_port] += 1
    return counts


def load_average() -> float:
    """The one-minute load average."""
    return float(Path("/proc/loadavg").read_text().split()[0])

"""``CRAWLER_DEPARTURE_LOG``: a file each request's departure is appended to as its bytes
leave, one ``<unix time> <url>`` line, for evidence that outlives a crash.

The request log (``request_log``) keeps the same stamp, but a row is made when the request
ends and stored with the storage pipeline's next batch: a process killed outright (SIGKILL, the
OOM killer) takes the rows of its batch and of its requests in flight with it. A ``write`` to a
file opened for appending is in the kernel when it returns and outlives the process; several
processes may share the file, each line going in whole with one call.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Self

from scrapy.settings import BaseSettings


class DepartureLog:
    def __init__(self, path: Path):
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self | None:
        path = settings.get("CRAWLER_DEPARTURE_LOG")
        return cls(Path(path)) if path else None

    def departed(self, at: float, url: str) -> None:
        os.write(self._fd, f"{at:.6f} {url}\n".encode())

    def close(self) -> None:
        os.close(self._fd)


def read_departures(path: Path, offset: int = 0) -> tuple[list[tuple[float, str]], int]:
    """The departures logged from ``offset`` on, as (time, URL), and the offset to read from
    next: a line not yet whole is left for then."""
    with path.open("rb") as log:
        log.seek(offset)
        data = log.read()
    whole = data[: data.rfind(b"\n") + 1]
    departures = []
    for line in whole.decode("utf-8", "replace").splitlines():
        at, _, url = line.partition(" ")
        departures.append((float(at), url))
    return departures, offset + len(whole)

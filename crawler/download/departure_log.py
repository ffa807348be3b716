"""``CRAWLER_DEPARTURE_LOG``: a file each request's departure is appended to as its bytes
leave, one ``<unix time> <pid> <url>`` line, for evidence that outlives a crash.

The request log (``request_log``) keeps the same stamp, but a row is made when the request
ends and stored with the storage pipeline's next batch: a process killed outright (SIGKILL, the
OOM killer) takes the rows of its batch and of its requests in flight with it. A ``write`` to a
file opened for appending is in the kernel when it returns and outlives the process; several
processes may share the file, each line going in whole with one call, the pid telling them
apart. The stamp is taken a reactor turn after the request was written: a process killed in
between leaves no line for a request that may have left.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Self

from scrapy.crawler import Crawler
from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)


class DepartureLog:
    def __init__(self, path: Path, stats: StatsCollector | None = None):
        self.path = path
        self.stats = stats
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._pid = os.getpid()
        self._failed = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | None:
        path = crawler.settings.get("CRAWLER_DEPARTURE_LOG")
        return cls(Path(path), crawler.stats) if path else None

    def departed(self, at: float, url: str) -> None:
        """Append a departure; a failed write (a full disk) is logged once and counted
        (``departure_log/errors``), never raised: the crawl goes on."""
        if self._fd < 0:
            return
        try:
            os.write(self._fd, f"{at:.6f} {self._pid} {url}\n".encode())
        except OSError as exc:
            if not self._failed:
                logger.warning("Could not append to the departure log %s: %s", self.path, exc)
            self._failed = True
            if self.stats is not None:
                self.stats.inc_value("departure_log/errors")

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def read_departures(path: Path, offset: int = 0) -> tuple[list[tuple[float, int, str]], int]:
    """The departures logged from ``offset`` on, as (time, pid, URL), and the offset to read
    from next: a line not yet whole is left for then."""
    with path.open("rb") as log:
        log.seek(offset)
        data = log.read()
    whole = data[: data.rfind(b"\n") + 1]
    departures = []
    for line in whole.decode("utf-8", "replace").splitlines():
        at, pid, url = line.split(" ", 2)
        departures.append((float(at), int(pid), url))
    return departures, offset + len(whole)

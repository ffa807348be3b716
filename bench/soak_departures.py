"""The workers' departure log (``CRAWLER_DEPARTURE_LOG``), read as it grows: the stamps of
requests whose request-log rows died with a killed worker (its batch, its requests in flight).
Only the lines of workers the soak killed count: a row missing for any other reason (a worker
stopped cleanly, a database outage) stays unstamped, a violation."""

from __future__ import annotations

import bisect
from collections import defaultdict
from pathlib import Path

from bench.realweb import ServedRequest
from bench.soak_checks import Stamp, nearest
from crawler.download.departure_log import read_departures

AFTER_ARRIVAL = 1.0
"""How long after the server read a request its stamp may be taken (a reactor turn after the
write, on a loaded machine); a later line of the URL is another request (the domain's delay)."""


class DepartureStamps:
    def __init__(self, path: Path, port: int):
        self.path = path
        self.port = port
        """The port the crawl's URLs carry (the web server's)."""
        self.killed: dict[int, float] = {}
        """The PIDs of the workers the soak killed, and when (a PID may be used again after)."""
        self._offset = 0
        self._departures: defaultdict[str, list[tuple[float, int]]] = defaultdict(list)
        """Each URL's departures, (time, PID), in order of time."""

    def stamp(self, served: ServedRequest, window: float = 5.0) -> Stamp | None:
        """The departure of the request's URL by a killed worker nearest to when the server read
        it (no time received: the log has none); None when there is none."""
        self._read()
        departures = self._departures.get(f"http://{served.host}:{self.port}{served.path}", [])
        low = bisect.bisect_left(departures, (served.start - window,))
        high = bisect.bisect_right(departures, (served.start + AFTER_ARRIVAL,))
        found = nearest(
            [at for at, pid in departures[low:high] if at <= self.killed.get(pid, float("-inf"))], served.start
        )
        return None if found is None else Stamp(found, None)

    def _read(self) -> None:
        if not self.path.exists():
            return
        departures, self._offset = read_departures(self.path, self._offset)
        for at, pid, url in departures:
            bisect.insort(self._departures[url], (at, pid))

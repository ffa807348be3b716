"""The workers' departure log (``CRAWLER_DEPARTURE_LOG``), read as it grows: the stamps of
requests whose request-log rows died with a killed worker (its batch, its requests in flight)."""

from __future__ import annotations

import bisect
from collections import defaultdict
from pathlib import Path

from bench.realweb import ServedRequest
from bench.soak_checks import Stamp
from crawler.download.departure_log import read_departures


class DepartureStamps:
    def __init__(self, path: Path, port: int):
        self.path = path
        self.port = port
        """The port the crawl's URLs carry (the web server's)."""
        self._offset = 0
        self._times: defaultdict[str, list[float]] = defaultdict(list)

    def stamp(self, served: ServedRequest, window: float = 5.0) -> Stamp | None:
        """The departure of the request's URL nearest to when the server read it (no time
        received: the log has none); None when none was logged within ``window``."""
        self._read()
        times = self._times.get(f"http://{served.host}:{self.port}{served.path}", [])
        i = bisect.bisect_left(times, served.start)
        near = [t for t in times[max(0, i - 1) : i + 1] if abs(t - served.start) <= window]
        return Stamp(min(near, key=lambda t: abs(t - served.start)), None) if near else None

    def _read(self) -> None:
        if not self.path.exists():
            return
        departures, self._offset = read_departures(self.path, self._offset)
        for at, url in departures:
            bisect.insort(self._times[url], at)

"""``scrapy serve`` watched as operators watch it, on a thread of its own: ``/api/stats`` polled
as the dashboard polls it (anonymous, within the anonymous rate limit) and ``/metrics`` scraped
as Prometheus scrapes it (with the scrape token). Every answer's status and time are kept."""

from __future__ import annotations

import re
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field

STATS_EVERY = 10.0
METRICS_EVERY = 15.0
FETCHED = re.compile(r"^crawler_pages_fetched_total (\S+)$", re.M)


@dataclass
class ApiWatch:
    base: str
    token: str
    timings: dict[str, list[float]] = field(default_factory=lambda: {"stats": [], "metrics": []})
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    pages_fetched: float | None = None
    """The last ``crawler_pages_fetched_total`` scraped."""
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> ApiWatch:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)

    def _run(self) -> None:
        due = {"stats": 0.0, "metrics": 0.0}
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= due["stats"]:
                due["stats"] = now + STATS_EVERY
                self._get("stats", "/api/stats", {})
            if now >= due["metrics"]:
                due["metrics"] = now + METRICS_EVERY
                body = self._get("metrics", "/metrics", {"Authorization": f"Bearer {self.token}"})
                if body and (found := FETCHED.search(body)):
                    self.pages_fetched = float(found.group(1))
            self._stop.wait(0.5)

    def _get(self, route: str, path: str, headers: dict[str, str]) -> str | None:
        started = time.monotonic()
        try:
            with urllib.request.urlopen(urllib.request.Request(self.base + path, headers=headers), timeout=30) as r:
                body, status = r.read().decode(errors="replace"), r.status
        except urllib.error.HTTPError as error:
            body, status = None, error.code
        except OSError:
            body, status = None, 0  # no answer at all: the server is not listening
        self.timings[route].append(time.monotonic() - started)
        self.statuses[(route, status)] += 1
        return body

"""What the soak measured, sampled every minute and printed at the end: per fault what it did,
every invariant, the processes' memory, descriptors and connections with their slopes after the
warm-up, the tables' sizes over time, the reactor's worst lag, the API's p95."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg

from bench.soak_checks import percentile, slope_per_hour
from bench.soak_db import SoakDatabase
from bench.soak_samples import ProcessSample, load_average, sample
from tests.outage_runs import HEARTBEAT

if TYPE_CHECKING:
    from bench.soak import Soak
    from bench.soak_api import ApiWatch
    from bench.soak_processes import Backends, Prune, Serve, Workers
    from bench.soak_schedule import Fault
    from bench.soak_watch import Watch
    from bench.soak_web import SoakWeb

LOGGED = re.compile(r"^(\S+ \S+) \[([^\]]+)\] (WARNING|ERROR|CRITICAL): (.*)$", re.M)
WARM_UP = 900.0
"""Slopes are taken after the run's first 15 minutes (a third of shorter runs)."""
AFTER_CONTINUE = 10.0
"""Heartbeats this long after a stopped worker was continued are left out of the reactor's lag
(the stop itself shows as lag)."""


@dataclass
class Sampler:
    database: SoakDatabase
    ports: tuple[int, ...]
    """The database proxy's and Redis's: each process's connections to them are counted."""
    processes: dict[str, list[ProcessSample]] = field(default_factory=lambda: defaultdict(list))
    born: dict[str, float] = field(default_factory=dict)
    tables: list[tuple[float, dict[str, int], float]] = field(default_factory=list)
    connections: list[tuple[float, int]] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)

    def sample(self, now: float, groups: list[Workers], serve: Serve, backends: Backends, web: SoakWeb) -> None:
        pids = {
            f"{group.name}{w.slot}#{w.process.pid}": (w.process.pid, w.started)
            for group in groups
            for w in group.running()
        }
        if serve.process is not None:
            pids["serve"] = (serve.process.pid, 10.0)
        if backends.redis.process is not None:
            pids[f"redis#{backends.redis.process.pid}"] = (backends.redis.process.pid, now)
        for name, (pid, born) in pids.items():
            self.born.setdefault(name, born)
            taken = sample(pid, now, self.ports)
            if taken is not None:
                self.processes[name].append(taken)
        self.loads.append(load_average())
        try:
            self.tables.append((now, self.database.table_rows(), self.database.database_mb()))
            self.connections.append((now, self.database.connections()))
        except psycopg.Error:
            pass  # the database is down: a gap in the series

    def worker_peaks(self, split: float) -> tuple[float | None, float | None]:
        """The highest RSS of the workers sampled before ``split`` and after."""
        samples = [s for name, taken in self.processes.items() if name.startswith("worker") for s in taken]
        before = [s.rss_mb for s in samples if s.at < split]
        after = [s.rss_mb for s in samples if s.at >= split]
        return max(before, default=None), max(after, default=None)

    def slopes(self, seconds: float, figure: str) -> dict[str, float]:
        """Per process that lived long enough after the warm-up, the slope of ``figure`` per hour."""
        warm_up = min(WARM_UP, seconds / 3)
        found = {}
        for name, samples in self.processes.items():
            kept = [(s.at, _figure(s, figure)) for s in samples if s.at >= max(warm_up, self.born[name] + 120)]
            if kept and kept[-1][0] - kept[0][0] >= min(600.0, seconds / 4):
                slope = slope_per_hour(kept)
                if slope is not None:
                    found[name] = slope
        return found


def _of_resident(slopes: dict[str, float]) -> float | None:
    """The slope of the resident, the one crawl process that lives the whole run (None: it was
    started again, and no life of it was long enough)."""
    return max((slope for name, slope in slopes.items() if name.startswith("resident")), default=None)


def _figure(taken: ProcessSample, figure: str) -> float:
    if figure == "rss":
        return taken.rss_mb
    if figure == "fds":
        return taken.fds
    return sum(taken.connections.values())


@dataclass
class Report:
    soak: Soak
    watch: Watch
    workers: Workers
    sampler: Sampler
    api: ApiWatch
    prune: Prune
    faults: list[tuple[Fault, float, float, int | None]]
    database: SoakDatabase

    def print(self) -> int:
        figures: dict[str, Any] = {}
        self._faults()
        figures |= self._invariants()
        figures |= self._processes()
        figures |= self._tables()
        figures |= self._api_and_rest()
        print(" ".join(f"{name}={_shown(value)}" for name, value in figures.items()), flush=True)
        broken = ("violations", "duplicates_beyond_leases", "lost_urls", "block_violations", "duplicate_rows")
        return 1 if any(figures[name] for name in broken) else 0

    def _attributed(self, when: float) -> str | None:
        """The fault whose leases may explain a page fetched again (first fetched at ``when``,
        run seconds): one that touched the workers or their stores, which began within a lease
        after that fetch."""
        lease = self.soak.args.lease
        for fault, began, ended, _ in self.faults:
            if not fault.kind.startswith("site") and began - lease <= when <= ended + 5:
                return fault.kind
        return None

    def _faults(self) -> None:
        started = self.soak.started
        by_fault: Counter[str] = Counter()
        for pair in self.watch.duplicate_pairs:
            by_fault[str(self._attributed(pair.first.start - started))] += 1
        self.duplicates_by_fault = by_fault
        logged = [
            (datetime.strptime(at, "%Y-%m-%d %H:%M:%S").timestamp() - started, f"[{name}] {level}: {message}")
            for incarnation in self.workers.incarnations
            for at, name, level, message in LOGGED.findall(incarnation.log.read_text(errors="replace"))
        ]
        print("\nfaults:")
        for fault, began, ended, pid in self.faults:
            exits = Counter(
                w.status
                for w in self.workers.incarnations
                if w.ended is not None and began <= w.ended <= min(ended + 60, self.soak.seconds)
            )
            lines = Counter(re.sub(r"\d+(\.\d+)?", "N", text)[:160] for at, text in logged if began <= at <= ended + 30)
            duplicates = sum(
                1
                for pair in self.watch.duplicate_pairs
                if began - self.soak.args.lease <= pair.first.start - started <= ended + 5
            )
            print(
                f"  {fault.kind:21} {began:7.0f}-{ended:7.0f} s  pid {pid or '-'}  worker exits {dict(exits) or '-'}  "
                f"pages fetched again {duplicates}"
            )
            for text, count in lines.most_common(6):
                print(f"      {count:4d} x {text}")

    def _invariants(self) -> dict[str, Any]:
        watch = self.watch
        stored = self.database.page_paths()
        fetched = watch.duplicates.fetched()
        lost = sorted(fetched - stored)
        duplicate_rows = self.database_duplicate_rows()
        beyond = self.duplicates_by_fault.get("None", 0)
        print(
            f"\ninvariants: {watch.spacing.gaps} gaps between requests of one host; short at the server "
            f"{sum(n for k, n in watch.outcomes.items() if k.startswith('gap/'))} ({dict(watch.outcomes)})"
        )
        for pair in watch.violations[:10]:
            print(
                f"  violation {pair.host}: {pair.first.path} at {pair.first.start:.3f}, {pair.second.path} at "
                f"{pair.second.start:.3f} (bound {pair.bound:g} s)"
            )
        print(
            f"  pages sent whole {watch.duplicates.fetches}, fetched again within the re-crawl interval "
            f"{len(watch.duplicate_pairs)} by fault {dict(self.duplicates_by_fault)}"
        )
        for pair in [p for p in watch.duplicate_pairs if self._attributed(p.first.start - self.soak.started) is None][
            :10
        ]:
            print(f"  fetched again {pair.host}{pair.second.path}: {pair.first.start:.3f} and {pair.second.start:.3f}")
        print(f"  URLs sent whole {len(fetched)}, rows {len(stored)}, without a row {len(lost)} {lost[:5]}")
        print(f"  statuses served {dict(sorted(watch.statuses.items()))}")
        return {
            "violations": watch.outcomes["gap/violation"] + watch.outcomes["gap/unstamped"],
            "short_gaps_late_read": watch.outcomes["gap/late_read"],
            "short_gaps_late_read_by_departure_log": watch.outcomes["gap/late_read_by_departure_log"],
            "gaps": watch.spacing.gaps,
            "duplicates_within_leases": len(watch.duplicate_pairs) - beyond,
            "duplicates_beyond_leases": beyond,
            "lost_urls": len(lost),
            "duplicate_rows": duplicate_rows,
            "answers_429": watch.blocks.answers,
            "block_violations": watch.outcomes["hit/violation"] + watch.outcomes["hit/unstamped"],
            "pages_sent": watch.duplicates.fetches,
        }

    def database_duplicate_rows(self) -> int:
        with psycopg.connect(self.database.url, autocommit=True) as connection:
            return connection.execute(
                "SELECT COUNT(*) FROM (SELECT url FROM pages GROUP BY url HAVING COUNT(*) > 1) AS twice"
            ).fetchone()[0]  # type: ignore[index]

    def _processes(self) -> dict[str, Any]:
        seconds = self.soak.seconds
        rss = self.sampler.slopes(seconds, "rss")
        fds = self.sampler.slopes(seconds, "fds")
        connections = self.sampler.slopes(seconds, "connections")
        print("\nprocesses (first, last sample; slope per hour after the warm-up):")
        for name, samples in self.sampler.processes.items():
            first, last = samples[0], samples[-1]
            print(
                f"  {name:22} {first.at:6.0f}-{last.at:6.0f} s  RSS {first.rss_mb:6.1f} -> {last.rss_mb:6.1f} MB "
                f"({_shown(rss.get(name))}/h)  fds {first.fds} -> {last.fds} ({_shown(fds.get(name))}/h)  "
                f"connections {first.connections} -> {last.connections}"
            )
        exits = Counter(w.status for w in self.workers.incarnations)
        print(f"  worker processes {len(self.workers.incarnations)}, exit statuses {dict(exits)}")
        largest = max(rss, key=lambda name: rss[name], default=None)
        peak = max((s.rss_mb for samples in self.sampler.processes.values() for s in samples), default=0.0)
        # Workers live one crawl each: a leak that outlives a crawl shows as the second half's
        # workers peaking higher than the first half's.
        first_half, second_half = self.sampler.worker_peaks(seconds / 2)
        db_connections = self.sampler.connections
        return {
            "rss_slope_mb_per_hour": rss.get(largest) if largest else None,
            "rss_slope_process": largest,
            "rss_max_mb": peak,
            "worker_rss_peak_first_half_mb": first_half,
            "worker_rss_peak_second_half_mb": second_half,
            "resident_rss_slope_mb_per_hour": _of_resident(rss),
            "resident_fd_slope_per_hour": _of_resident(fds),
            "fd_slope_per_hour": max(fds.values(), default=None),
            "fd_max": max((s.fds for samples in self.sampler.processes.values() for s in samples), default=0),
            "connections_slope_per_hour": max(connections.values(), default=None),
            "db_connections_max": max((n for _, n in db_connections), default=None),
            "db_connections_last": db_connections[-1][1] if db_connections else None,
            "db_connections_slope_per_hour": slope_per_hour(
                [(t, n) for t, n in db_connections if t >= min(WARM_UP, seconds / 3)]
            ),
            "worker_processes": len(self.workers.incarnations),
            "reactor_worst_lag_s": self._worst_lag(),
        }

    def _worst_lag(self) -> float | None:
        continued = {pid: ended for fault, _, ended, pid in self.faults if fault.kind == "worker_stopped" and pid}
        started = self.soak.started
        worst = None
        for incarnation in self.workers.incarnations:
            resumed = continued.get(incarnation.process.pid)
            for at, lag in HEARTBEAT.findall(incarnation.log.read_text(errors="replace")):
                when = datetime.strptime(at, "%Y-%m-%d %H:%M:%S").timestamp() - started
                if resumed is not None and resumed - 1 <= when <= resumed + AFTER_CONTINUE:
                    continue
                worst = max(worst or 0.0, float(lag))
        return worst

    def _tables(self) -> dict[str, Any]:
        tables = self.sampler.tables
        if not tables:
            return {}
        print("\ntables (rows at the first, middle and last sample):")
        picks = [tables[0], tables[len(tables) // 2], tables[-1]]
        for name in tables[-1][1]:
            counts = " -> ".join(f"{rows.get(name, 0)} ({at / 60:.0f} min)" for at, rows, _ in picks)
            print(f"  {name:18} {counts}")
        print(f"  database MB {' -> '.join(f'{mb:.0f}' for _, _, mb in picks)}")
        last = tables[-1][1]
        return {f"rows_{name}": last[name] for name in last} | {"database_mb": round(tables[-1][2])}

    def _api_and_rest(self) -> dict[str, Any]:
        api = self.api
        print(f"\nAPI answers {dict(api.statuses)}; last crawler_pages_fetched_total {api.pages_fetched}")
        print(f"prune runs {dict(self.prune.statuses)}; last output: {self.prune.last_output[-300:]!r}")
        for failure in self.prune.failures:
            print(f"  failed prune run at {failure!r}")
        loads = self.sampler.loads
        return {
            "api_stats_p50_ms": _ms(percentile(api.timings["stats"], 0.5)),
            "api_stats_p95_ms": _ms(percentile(api.timings["stats"], 0.95)),
            "api_metrics_p95_ms": _ms(percentile(api.timings["metrics"], 0.95)),
            "api_errors": sum(n for (_, status), n in api.statuses.items() if status != 200),
            "prune_runs": sum(self.prune.statuses.values()),
            "prune_failures": sum(n for status, n in self.prune.statuses.items() if status != 0),
            "faults": len(self.faults),
            "load_avg_mean": round(sum(loads) / len(loads), 2) if loads else None,
            "load_avg_max": max(loads, default=None),
            "minutes": self.soak.args.minutes,
        }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)

"""The crawl at a glance, gathered once for ``/api/stats`` and ``/metrics``: processes, totals,
rates, alerts, frontier and domains."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from crawler.api import figures, params
from crawler.api.context import ApiContext
from crawler.api.runs import CrawlRun, chosen_run, latest_runs
from crawler.storage.controls import crawl_paused
from crawler.storage.domains import domain_totals
from crawler.storage.inbox import inbox_summary
from crawler.storage.observations import stats_samples, workers
from crawler.storage.values import unix_time, utc_now

MINUTE = 60.0
WINDOW_MINUTES = figures.ERROR_RATE_MINUTES + 1


@dataclass(slots=True)
class Overview:
    now: float
    workers: list[dict[str, Any]]
    totals: dict[str, float]
    per_minute: list[figures.Point]
    alerts: list[figures.Alert]
    frontier: dict[str, Any]
    domains: dict[str, int]
    paused: bool
    runs: list[CrawlRun]
    """The latest run of each crawl, the most recently started first."""
    run: CrawlRun | None
    """The run shown: the one asked for, else the crawl running."""
    run_per_minute: list[figures.Point]

    @property
    def live_workers(self) -> list[dict[str, Any]]:
        return [w for w in self.workers if w["live"]]

    @property
    def pages_per_second(self) -> float:
        return self.per_minute[-1].pages_per_second if self.per_minute else 0.0

    @property
    def success_rate(self) -> float | None:
        """2xx and 3xx among the responses of the last five minutes."""
        return figures.success_rate(self.per_minute)


async def gather(found: ApiContext, crawl: str | None = None) -> Overview:
    """The figures of every process, and those of the run of ``crawl`` (else of the crawl
    running); an unknown ``crawl`` is a 404."""
    moment = utc_now()
    now = moment.timestamp()
    processes, samples, (domains, frontier), paused = await asyncio.gather(
        workers(found.db),
        recent_samples(found, moment - timedelta(minutes=WINDOW_MINUTES)),
        domains_and_frontier(found, moment),
        crawl_paused(found.db),
    )
    timeout = found.config.heartbeat_timeout
    stale = mark_liveness(processes, now, timeout)
    per_minute = _minutes(samples, now, stopped(processes))
    runs = latest_runs(processes)
    run = run_or_404(runs, crawl)
    run_per_minute = [] if run is None else _minutes(run_samples(samples, run), now, stopped(run.workers))
    # Every process ever recorded counts, finished ones with their final figures: the totals
    # only grow, as Prometheus expects of a counter.
    totals = figures.totals(w["stats"] for w in processes)
    return Overview(
        now,
        processes,
        totals,
        per_minute,
        figures.alerts(per_minute, stale, timeout),
        frontier,
        domains,
        paused,
        runs,
        run,
        run_per_minute,
    )


def _minutes(samples: list[figures.Sample], now: float, stopped: set[str]) -> list[figures.Point]:
    return figures.series(samples, now - (WINDOW_MINUTES - 1) * MINUTE, now, MINUTE, stopped)


def mark_liveness(processes: list[dict[str, Any]], now: float, timeout: float) -> list[str]:
    """Complete ``workers`` rows: their stats' numbers, heartbeat age, whether ``live``; the
    ids of those that stopped sending heartbeats without finishing, and that no process of
    their crawl started after (a killed worker started again, the next run from cron, resolve
    the alert; their rows stay for ever, so it would never end)."""
    latest_start: dict[str, float] = {}
    for worker in processes:
        if (crawl := worker.get("crawl_id")) is not None:
            started = unix_time(worker["started_at"]) or 0.0
            latest_start[crawl] = max(latest_start.get(crawl, 0.0), started)
    stale = []
    for worker in processes:
        worker["stats"] = figures.numeric(worker["stats"])
        heartbeat = unix_time(worker["heartbeat_at"]) or 0.0
        worker["heartbeat_age"] = round(now - heartbeat, 3)
        worker["live"] = figures.is_live(worker["state"], heartbeat, now, timeout)
        replaced = latest_start.get(worker.get("crawl_id") or "", 0.0) > heartbeat
        if worker["state"] in figures.LIVE_STATES and not worker["live"] and not replaced:
            stale.append(worker["worker_id"])
    return stale


def stopped(processes: Iterable[dict[str, Any]]) -> set[str]:
    """The processes that send no more samples: finished, or silent (``mark_liveness`` first)."""
    return {w["worker_id"] for w in processes if not w["live"]}


def run_or_404(runs: list[CrawlRun], crawl: str | None) -> CrawlRun | None:
    """``chosen_run``, with a 404 for a crawl asked for and not found."""
    run = chosen_run(runs, crawl)
    if crawl is not None and run is None:
        raise params.not_found(f"no crawl {crawl!r}")
    return run


def run_samples(samples: list[figures.Sample], run: CrawlRun) -> list[figures.Sample]:
    members = {w["worker_id"] for w in run.workers}
    return [s for s in samples if s.worker_id in members]


async def recent_samples(found: ApiContext, since: datetime) -> list[figures.Sample]:
    """The processes' stats samples since ``since``, their numbers only."""
    return [
        figures.Sample(worker, at, figures.numeric(stats)) for worker, at, stats in await stats_samples(found.db, since)
    ]


async def domains_and_frontier(found: ApiContext, moment: datetime) -> tuple[dict[str, int], dict[str, Any]]:
    """The domain totals, then the frontier with their sum of queue snapshots: one scan of
    ``domain_state`` rather than two."""
    domains = await domain_totals(found.db, moment)
    return domains, await frontier_summary(found, queued_snapshot=domains["queued"])


async def frontier_summary(found: ApiContext, queued_snapshot: int) -> dict[str, Any]:
    """Without Redis, what the database holds: URLs seeded through the API and not yet taken,
    the sum of the crawl processes' own queue snapshots (``queued_snapshot``, from the domain
    totals), and rows of URLs a job left unfetched."""
    pending, oldest, skipped = await inbox_summary(found.db)
    oldest_at = unix_time(oldest)
    summary: dict[str, Any] = {
        "source": "database",
        "inbox_pending": pending,
        "inbox_oldest_age": None if oldest_at is None else round(utc_now().timestamp() - oldest_at, 3),
        "queued": queued_snapshot,
        "skipped_rows": skipped,
    }
    if found.frontier is not None:
        crawls = await asyncio.to_thread(found.frontier.sizes)
        summary.update(
            source="redis",
            crawls=crawls,
            queued=sum(c["queued"] for c in crawls),
            delayed=sum(c["delayed"] for c in crawls),
            spilled=sum(c["spilled"] for c in crawls),
            leased=sum(c["leased"] for c in crawls),
            reclaimed=sum(c["reclaimed"] for c in crawls),
        )
    summary["size"] = (
        summary["queued"] + summary.get("delayed", 0) + summary.get("spilled", 0) + summary["inbox_pending"]
    )
    return summary


def point_json(point: figures.Point) -> dict[str, Any]:
    return {
        "at": point.at,
        "pages_per_second": round(point.pages_per_second, 3),
        "statuses": point.statuses,
        "frontier": point.frontier,
    }

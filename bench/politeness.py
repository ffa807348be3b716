"""Politeness on the local test web, from the server's own request log: this crawler against
stock Scrapy (``ROBOTSTXT_OBEY`` and AutoThrottle on) in the same run.

    .venv/bin/python -m bench.politeness [--short]

1. one host with ``Crawl-delay: 1`` for 60 s: spacing violations and requests/s;
2. eight hosts with crawl delays from 0.25 s to 2 s, two hosts with a hidden limit of
   4 requests/s enforced with 429 (one sends ``Retry-After: 2``) and a slow host (1.5 s per
   answer), for 120 s: total pages/s against the sum of the allowed rates, violations, each
   host's rate, the 429 share after the first minute, Retry-After waits, and the most requests
   in flight at once per host;
3. a second run against the 429 host, starting from the learned delay the first one stored;
4. a slow host (8 s answers) that refuses everything with 429 (``Retry-After: 1``) for 30 s:
   the most requests in flight before, during and after, as the learned delay grows past the
   baseline.

``--short`` divides the durations by four, for a quick look; ``--crawler-only`` skips stock Scrapy;
``--scenario N`` (repeatable) runs only those (3 needs 2); ``--processes N`` runs every crawl as N
processes sharing one frontier through Redis (``REDIS_URL``, default the local one), and stock
Scrapy as N scrapy-redis processes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import redis

from crawler.redis.keys import delete_matching
from tests.helpers import forget_crawl, scrapy_command
from tests.testweb import TestWeb
from tests.testweb.control import LoggedRequest

ROOT = Path(__file__).resolve().parents[1]
TOLERANCE = 0.010
DELAYS = [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0]
HIDDEN_RATE = 4.0
REDIS_URL = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"


@dataclass
class HostReport:
    label: str
    requests: int
    pages: int
    rate: float
    violations: int
    min_gap: float
    refused: int
    refused_late: int
    late_requests: int
    retry_after_early: int
    max_inflight: int
    after_429: float | None
    """The shortest time from a 429's answer to the next request to the host, from any process."""


def _run_ours(urls: list[str], seconds: float, database: str, processes: int = 1, **settings: str) -> None:
    """One crawl, or ``processes`` processes sharing one frontier through Redis."""
    defaults = {"CLOSESPIDER_TIMEOUT": seconds, "DATABASE_URL": database, "LOG_LEVEL": "WARNING"}
    command = scrapy_command("crawl", "links", "-a", f"url={','.join(urls)}", "-a", "max_depth=1000", settings=defaults)
    if processes > 1:
        crawl = f"bench-{uuid.uuid4().hex[:8]}"
        settings = {**settings, "REDIS_URL": REDIS_URL, "CRAWLER_CRAWL_ID": crawl}
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    _run_all([command] * processes, ROOT, {**os.environ, "PYTHONPATH": str(ROOT)})
    if processes > 1:
        forget_crawl(redis.Redis.from_url(REDIS_URL), crawl)


def _run_stock(urls: list[str], seconds: float, workdir: str, processes: int = 1) -> None:
    """Stock Scrapy, or ``processes`` stock scrapy-redis processes (its scheduler, dupefilter
    and default priority queue, kept between processes)."""
    settings: dict[str, object] = {
        "CLOSESPIDER_TIMEOUT": seconds,
        "LOG_LEVEL": "WARNING",
        "ROBOTSTXT_OBEY": True,
        "AUTOTHROTTLE_ENABLED": True,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
        "DEPTH_LIMIT": 0,
    }
    if processes > 1:
        settings |= {
            "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
            "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
            "SCHEDULER_PERSIST": True,
            "REDIS_URL": REDIS_URL,
        }
    stock = str(ROOT / "bench" / "stock_crawlspider.py")
    command = scrapy_command("runspider", stock, "-a", f"url={','.join(urls)}", settings=settings)
    if processes > 1:
        _clear_redis("stock:*")
    _run_all([command] * processes, workdir, dict(os.environ))
    if processes > 1:
        _clear_redis("stock:*")


def _run_all(commands: list[list[str]], cwd: Path | str, env: dict[str, str]) -> None:
    workers = [subprocess.Popen(command, cwd=cwd, env=env) for command in commands]
    for worker in workers:
        if worker.wait() != 0:
            raise SystemExit(f"a crawl process failed with exit code {worker.returncode}")


def _clear_redis(pattern: str) -> None:
    delete_matching(redis.Redis.from_url(REDIS_URL), pattern)


def _report(
    label: str, log: list[LoggedRequest], seconds: float, delay: float | None, retry_after: float | None
) -> HostReport:
    log = sorted(log, key=lambda e: e.start)
    starts = [e.start for e in log]
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    violations = sum(1 for gap in gaps if delay and gap < delay - TOLERANCE)
    first = starts[0] if starts else 0.0
    late = [e for e in log if e.start - first >= 60]
    early_retries = 0
    if retry_after:
        for entry in log:
            if entry.status == 429:
                following = [e.start for e in log if e.start > entry.start]
                if following and min(following) < entry.end + retry_after - TOLERANCE:
                    early_retries += 1
    after_429 = [min((e.start for e in log if e.start > r.end), default=None) for r in log if r.status == 429]
    waits = [start - r.end for r, start in zip((r for r in log if r.status == 429), after_429) if start is not None]
    pages = sum(1 for e in log if e.status == 200)
    return HostReport(
        label,
        len(log),
        pages,
        pages / seconds,
        violations,
        min(gaps, default=0.0),
        sum(1 for e in log if e.status == 429),
        sum(1 for e in late if e.status == 429),
        len(late),
        early_retries,
        _peak(log),
        min(waits, default=None),
    )


def _print(title: str, reports: list[HostReport]) -> None:
    print(f"\n{title}")
    print(
        f"{'host':12}{'requests':>9}{'pages':>7}{'pages/s':>9}{'violations':>11}{'min gap':>9}{'429s':>6}{'429s >1min':>11}{'early RA':>9}{'max inflight':>13}{'after 429':>10}"
    )
    for r in reports:
        late = f"{r.refused_late}/{r.late_requests}"
        after = "-" if r.after_429 is None else f"{r.after_429:.3f}"
        print(
            f"{r.label:12}{r.requests:9d}{r.pages:7d}{r.rate:9.2f}{r.violations:11d}{r.min_gap:9.3f}{r.refused:6d}{late:>11}{r.retry_after_early:9d}{r.max_inflight:13d}{after:>10}"
        )


def _print_totals(reports: list[HostReport]) -> None:
    """Total pages/s against the sum of the allowed rates: the eight delay hosts with each 429
    host alone (the acceptance scenario has one) and with both; the slow host has no allowed rate."""
    rates = {r.label: r.rate for r in reports}
    delay_hosts = [f"delay-{d}" for d in DELAYS]
    allowed_delays = sum(1 / d for d in DELAYS)
    for limited in (["limited"], ["limited-ra"], ["limited", "limited-ra"]):
        total = sum(rates[h] for h in delay_hosts + limited)
        allowed = allowed_delays + HIDDEN_RATE * len(limited)
        print(
            f"total pages/s, delay hosts + {' + '.join(limited):20} {total:6.2f} = {100 * total / allowed:5.1f}% of the allowed {allowed:.2f}"
        )


def _concurrency_phases(log: list[LoggedRequest]) -> None:
    """Most requests in flight at once, before, during and after a run of 429s."""
    log = sorted(log, key=lambda e: e.start)
    refused = [e.start for e in log if e.status == 429]
    if not refused:
        print("\n[4] the congested host sent no 429")
        return
    phases = {
        "before the 429s": [e for e in log if e.start < refused[0]],
        "during": [e for e in log if refused[0] <= e.start <= refused[-1]],
        "after": [e for e in log if e.start > refused[-1]],
    }
    print(f"\n[4] a slow host (8 s answers) that refuses everything for a while: {len(refused)} 429s")
    for name, entries in phases.items():
        print(f"    {name:16} requests {len(entries):3d}  max in flight {_peak(entries)}")


def _peak(log: list[LoggedRequest]) -> int:
    events = sorted([(e.start, 1) for e in log] + [(e.end, -1) for e in log], key=lambda x: (x[0], x[1]))
    inflight = peak = 0
    for _, step in events:
        inflight += step
        peak = max(peak, inflight)
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--short", action="store_true")
    parser.add_argument("--crawler-only", action="store_true", help="skip the stock Scrapy runs")
    parser.add_argument(
        "--scenario", type=int, action="append", choices=[1, 2, 3, 4], help="run only these (repeatable)"
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="processes per crawl, sharing one frontier through Redis (stock: scrapy-redis)",
    )
    args = parser.parse_args()
    scale = 0.25 if args.short else 1.0
    scenarios = set(args.scenario or [1, 2, 3, 4])
    one_host, many_hosts = 60 * scale, 120 * scale

    sites = {"delay-1": "paced:crawl_delay=1,pages=5000"}
    sites |= {f"delay-{d}": f"paced:crawl_delay={d},pages=5000" for d in DELAYS}
    sites |= {
        "limited": f"paced:rate={HIDDEN_RATE},pages=5000",
        "limited-ra": f"paced:rate={HIDDEN_RATE},retry_after=2,pages=5000",
    }
    sites |= {"slow": "paced:latency_ms=1500,pages=5000"}
    # 8 s answers; every request refused at once with 429 (Retry-After: 1) from 30 s to 60 s.
    sites |= {"congested": f"paced:latency_ms=8000,refuse={30 * scale:g}-{60 * scale:g},pages=5000"}
    ours = {"CRAWLER_DEFAULT_DELAY": "0.05", "CRAWLER_MIN_DELAY": "0.05"}
    with TestWeb(sites) as web, tempfile.TemporaryDirectory() as tmp:
        many = [f"delay-{d}" for d in DELAYS] + ["limited", "limited-ra", "slow"]

        def database(name: str) -> str:
            return f"sqlite:///{tmp}/{name}.db"

        def hosts_report(duration: float) -> list[HostReport]:
            delays = {f"delay-{d}": d for d in DELAYS}
            return [_report(h, web.log(h), duration, delays.get(h), 2.0 if h == "limited-ra" else None) for h in many]

        crawlers = ("crawler",) if args.crawler_only else ("crawler", "stock")
        for name in crawlers if 1 in scenarios else ():
            web.clear()
            if name == "crawler":
                _run_ours([web.url("delay-1")], one_host, database("one"), args.processes, **ours)
            else:
                _run_stock([web.url("delay-1")], one_host, tmp, args.processes)
            _print(
                f"[1] {name}: one host, Crawl-delay 1, {one_host:.0f} s",
                [_report("delay-1", web.log("delay-1"), one_host, 1.0, None)],
            )

        results = {}
        for name in crawlers if {2, 3} & scenarios else ():
            web.clear()
            if name == "crawler":
                _run_ours([web.url(h) for h in many], many_hosts, database("many"), args.processes, **ours)
            else:
                _run_stock([web.url(h) for h in many], many_hosts, tmp, args.processes)
            reports = results[name] = hosts_report(many_hosts)
            _print(f"[2] {name}: {len(many)} hosts, {many_hosts:.0f} s", reports)
            _print_totals(reports)

        if 4 in scenarios:
            web.clear()
            # No latency factor here: it alone would keep an 8 s host to one request at a time.
            _run_ours(
                [web.url("congested")],
                130 * scale,
                database("congested"),
                args.processes,
                **ours,
                CRAWLER_LATENCY_FACTOR="0",
            )
            _concurrency_phases(web.log("congested"))

        if 3 in scenarios:
            web.clear()
            _run_ours([web.url("limited")], one_host, database("many"), args.processes, **ours)
            second = _report("limited", web.log("limited"), one_host, None, None)
            first = next(r for r in results["crawler"] if r.label == "limited")
            print(
                f"\n[3] second run against the 429 host: {second.refused} 429s in {one_host:.0f} s "
                f"(first run: {first.refused} in {many_hosts:.0f} s), {second.rate:.2f} pages/s"
            )


if __name__ == "__main__":
    main()

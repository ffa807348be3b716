"""Spacing on the wire, judged by a real web server's own access log: nginx serving the Python
documentation gzip-compressed (``bench/realweb.py``; pages up to 2.5 MB).

    .venv/bin/python -m bench.spacing_realweb delays [--seconds 600] [--processes 3] [--cluster] [--hog] [--keep DIR]
    .venv/bin/python -m bench.spacing_realweb many [--hosts 1000] [--pages 3000] [--processes 3] [--cluster] [--hog]

``delays``: two hosts with ``Crawl-delay`` 1 and 0.5, crawled by following links for
``--seconds`` from each host's home page and its two largest pages, the general index and the
table of contents (1.7 and 2.6 MB, some 17,000 and 14,000 links); per host the requests, the
gaps shorter than the delay minus 10 ms, the shortest and the longest gap, the gaps longer than
twice the delay, and the rate against the allowed one (1/delay, over the host's active span);
then whether each host reached ``FULL_RATE`` of the allowed rate with no gap over twice the delay.
``many``: ``--hosts`` hosts without ``Crawl-delay`` (the default delay of 1 s), ``--pages`` pages
in all, each host's share given as seeds; the short gaps over every host.

``--processes N`` runs N crawl processes sharing one frontier through Redis (``REDIS_URL``,
default the local one); ``--cluster`` shares it through a Redis Cluster started for the run
instead (three masters and a replica of each, six ``redis-server`` processes on loopback,
``tests/redis_cluster.py``), the workers given the URL of one node. The first line of the
results names the Redis shared and, for a cluster, whether a master changed during the run (a
failover). ``--hog`` spins a process per core beside the crawl. ``--keep DIR`` keeps the crawl
processes' log (``crawl.log``, at INFO with their stats; else a temporary one at WARNING) and
nginx's access log (``access.log``) in ``DIR``. The start of a request is when nginx read its
first byte (``$msec - $request_time``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.many_domains import seeds
from bench.politeness import REDIS_URL, ROOT, _clear_redis, _run_all
from bench.realweb import CpuHog, RealWeb, ServedRequest, by_host, gaps, loopback_addresses, short_gaps
from tests.helpers import scrapy_command
from tests.redis_cluster import RedisCluster

TOLERANCE = 0.010
DEFAULT_DELAY = 1.0
FULL_RATE = 0.95
"""The share of a host's allowed rate a crawl at full speed reaches (the margin of a paced
request, ``CRAWLER_SPACING_MARGIN``, is 2 % of it)."""
INDEX_PAGES = ("/genindex-all.html", "/contents.html")


@dataclass
class SharedRedis:
    """The Redis the crawl processes share: the local one (``REDIS_URL``), a Redis Cluster of
    the run's own, or none for a single process."""

    url: str | None
    label: str
    cluster: RedisCluster | None = None
    masters: frozenset[int] = frozenset()
    """The ports of a cluster's masters at the start."""

    def clear(self, pattern: str) -> None:
        """Delete a crawl's keys from the local Redis; a cluster of the run's own goes with them."""
        if self.url == REDIS_URL:
            _clear_redis(pattern)

    def failovers(self) -> str:
        """For a cluster, whether its masters are still those of the start."""
        if self.cluster is None:
            return ""
        now = {node.port for node in self.cluster.masters()}
        return (
            "; masters unchanged"
            if now == self.masters
            else f"; masters changed: {sorted(self.masters)} -> {sorted(now)}"
        )


@contextmanager
def shared_redis(args: argparse.Namespace, folder: Path) -> Iterator[SharedRedis]:
    if args.cluster:
        cluster = RedisCluster(folder / "cluster").start()
        try:
            masters = frozenset(node.port for node in cluster.masters())
            yield SharedRedis(cluster.url, f"Redis Cluster of 3 masters + 3 replicas ({cluster.url})", cluster, masters)
        finally:
            cluster.stop()
    elif args.processes > 1:
        yield SharedRedis(REDIS_URL, f"single Redis ({REDIS_URL})")
    else:
        yield SharedRedis(None, "no Redis")


def kept_log(args: argparse.Namespace) -> dict[str, str]:
    """The settings that write the crawl processes' log into ``--keep``, at INFO (stats included)."""
    if not args.keep:
        return {}
    args.keep.mkdir(parents=True, exist_ok=True)
    return {"LOG_LEVEL": "INFO", "LOG_FILE": str(args.keep.resolve() / "crawl.log")}


def keep_access_log(args: argparse.Namespace, web: RealWeb) -> None:
    """nginx's access log into ``--keep``, before the server's folder goes."""
    if args.keep:
        shutil.copyfile(web.access_log, args.keep / "access.log")


def crawl(urls: list[str], seconds: float, folder: Path, processes: int, redis: SharedRedis, **settings: str) -> float:
    """Crawl ``urls`` by following links, with ``processes`` processes sharing ``redis``; the
    wall time taken."""
    seeds = folder / "seeds.txt"
    seeds.write_text("\n".join(urls) + "\n")
    settings = {
        "CLOSESPIDER_TIMEOUT": f"{seconds:g}",
        "DATABASE_URL": f"sqlite:///{folder}/crawler.db",
        "LOG_LEVEL": "WARNING",
        "LOG_FILE": f"{folder}/crawl.log",
        **settings,
    }
    command = scrapy_command("crawl", "links", "-a", f"seeds_file={seeds}", "-a", "max_depth=1000", settings=settings)
    crawl_id = f"bench-{uuid.uuid4().hex[:8]}"
    if redis.url:
        # Shared processes wait for work for ever by default: they end 5 s after the frontier empties.
        settings = {**settings, "REDIS_URL": redis.url, "CRAWLER_CRAWL_ID": crawl_id, "CRAWLER_IDLE_CLOSE_SECONDS": "5"}
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    started = time.monotonic()
    try:
        _run_all([command] * processes, ROOT, {**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        redis.clear(f"crawler:{{{crawl_id}}}:*")
    return time.monotonic() - started


@dataclass(frozen=True, slots=True)
class HostFigures:
    short: int
    """Gaps shorter than the delay minus ``TOLERANCE``."""
    long: list[str]
    """Gaps longer than twice the delay, each with the requests around it."""
    share: float
    """The rate reached, as a share of the allowed one."""
    line: str

    @property
    def full_rate(self) -> bool:
        return self.share >= FULL_RATE and not self.long


def host_figures(host: str, requests: list[ServedRequest], delay: float) -> HostFigures:
    host_gaps = gaps(requests)
    short = short_gaps(requests, delay, TOLERANCE)
    long = [
        f"  gap {gap:.3f} s after {before.path} ({before.start - requests[0].start:.0f} s in), before {after.path}"
        for gap, before, after in zip(host_gaps, requests, requests[1:])
        if gap > 2 * delay
    ]
    span = requests[-1].start - requests[0].start if len(requests) > 1 else 0.0
    rate = (len(requests) - 1) / span if span else 0.0
    shortest = f"{min(host_gaps):.3f}" if host_gaps else "-"
    longest = f"{max(host_gaps):.3f}" if host_gaps else "-"
    worst = f" (shortest of them {min(short):.3f} s)" if short else ""
    return HostFigures(
        len(short),
        long,
        rate * delay,
        f"{host:16} delay {delay:4.2f} s  {len(requests):5d} requests in {span:.0f} s  short gaps {len(short)}{worst}  "
        f"min gap {shortest} s  max gap {longest} s  gaps over twice the delay {len(long)}  "
        f"rate {rate:.3f}/s = {rate * delay:.1%} of the allowed rate",
    )


def delays(args: argparse.Namespace) -> None:
    site_delays = {0: 1.0, 1: 0.5}
    addresses = loopback_addresses(2)
    with (
        RealWeb(2, delays={addresses[i]: d for i, d in site_delays.items()}) as web,
        tempfile.TemporaryDirectory() as tmp,
        shared_redis(args, Path(tmp)) as redis,
    ):
        hog = CpuHog(os.cpu_count() or 1) if args.hog else None
        if hog:
            hog.start()
        try:
            seeds = [web.url(i, path) for i in site_delays for path in ("/index.html", *INDEX_PAGES)]
            wall = crawl(seeds, args.seconds, Path(tmp), args.processes, redis, **kept_log(args))
        finally:
            if hog:
                hog.stop()
        hosts = by_host(web.log())
        keep_access_log(args, web)
        print(
            f"\ndelays: {args.processes} process(es), hog {'on' if args.hog else 'off'}, {wall:.0f} s, "
            f"{redis.label}{redis.failovers()}"
        )
        figures = [
            host_figures(web.addresses[i], hosts.get(web.addresses[i], []), delay) for i, delay in site_delays.items()
        ]
        for host in figures:
            print("\n".join([host.line, *host.long]))
        print(f"short gaps in all: {sum(host.short for host in figures)}")
        verdicts = ", ".join(
            f"{web.addresses[i]} {'yes' if host.full_rate else 'no'}" for i, host in zip(site_delays, figures)
        )
        print(f"full rate (at least {FULL_RATE:.0%} of the allowed rate, no gap over twice the delay): {verdicts}")


def many(args: argparse.Namespace) -> None:
    with (
        RealWeb(args.hosts, crawl_delay=None) as web,
        tempfile.TemporaryDirectory() as tmp,
        shared_redis(args, Path(tmp)) as redis,
    ):
        hog = CpuHog(os.cpu_count() or 1) if args.hog else None
        if hog:
            hog.start()
        try:
            # Every host's share of the pages as seeds, nothing followed: following links from a
            # thousand seeds, the first hosts' links kept the crawl busy and most seeds waited.
            wall = crawl(
                seeds(web, args.pages),
                args.seconds,
                Path(tmp),
                args.processes,
                redis,
                CRAWLER_MAX_PAGES=str(args.pages),
                **kept_log(args),
            )
        finally:
            if hog:
                hog.stop()
        hosts = by_host(web.log())
        keep_access_log(args, web)
        requests = sum(len(r) for r in hosts.values())
        all_gaps = [g for r in hosts.values() for g in gaps(r)]
        short = [g for r in hosts.values() for g in short_gaps(r, DEFAULT_DELAY, TOLERANCE)]
        print(
            f"\nmany: {args.hosts} hosts, {args.pages} pages, {args.processes} process(es), "
            f"hog {'on' if args.hog else 'off'}, {redis.label}{redis.failovers()}"
        )
        print(
            f"{requests} requests (robots.txt included) on {len(hosts)} hosts in {wall:.0f} s; "
            f"{len(all_gaps)} gaps, {len(short)} shorter than {DEFAULT_DELAY - TOLERANCE:.2f} s"
            + (f" (shortest {min(short):.3f} s)" if short else "")
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    scenarios = parser.add_subparsers(dest="scenario", required=True)
    two = scenarios.add_parser("delays", help="two hosts, Crawl-delay 1 and 0.5")
    two.add_argument("--seconds", type=float, default=600.0)
    lots = scenarios.add_parser("many", help="many hosts at the default delay")
    lots.add_argument("--hosts", type=int, default=1000)
    lots.add_argument("--pages", type=int, default=3000)
    lots.add_argument("--seconds", type=float, default=600.0, help="time budget of the crawl")
    for scenario in (two, lots):
        scenario.add_argument("--processes", type=int, default=1)
        scenario.add_argument("--hog", action="store_true", help="a CPU hog per core beside the crawl")
        scenario.add_argument(
            "--cluster", action="store_true", help="share the frontier through a Redis Cluster started for the run"
        )
        scenario.add_argument(
            "--keep",
            type=Path,
            metavar="DIR",
            help="keep the crawl processes' log (INFO, their stats included) and nginx's access log in DIR",
        )
    args = parser.parse_args()
    delays(args) if args.scenario == "delays" else many(args)


if __name__ == "__main__":
    main()

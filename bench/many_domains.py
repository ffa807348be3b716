"""What politeness costs with many domains: CPU per page of the same crawl with the default
politeness (1 s per domain, robots.txt, the limiter) and with pacing off, on nginx serving the
Python documentation gzip-compressed on many loopback hosts (``bench/realweb.py``).

    .venv/bin/python -m bench.many_domains [--hosts 1000] [--pages 3000] [--runs 3] [--profile DIR]
                                           [--robots served|absent|both] [--also NAME=PATH ...]

Each host is given the same number of pages as seeds (a rotation through the corpus, the same
in both crawls) and nothing else is followed (``bench/seeds_spider.py``), so both crawls fetch
exactly the same pages: with the links spider, links found early filled the page budget before
later seeds were scheduled, and which ones depended on the pacing. CPU is the crawl process's own (user + system).
Prints every run, then medians of ``--runs``: CPU ms per page paced and unpaced, their ratio,
and the wall time of the paced crawl. A crawl that fetched fewer pages than it was seeded with
(the ``--timeout`` budget ended it) is marked ``INCOMPLETE`` and left out of the medians: it
fetched the robots.txt and probe of every host, all before the pages, but not every page, so its
CPU per page is not that of the same crawl. ``--robots`` says whether the hosts serve a robots.txt
(``User-agent: *`` and a ``Sitemap`` line, no rules) or answer 404 for it (``absent``); by
default both, one after the other (robots.txt is obeyed in both modes: only pacing differs). ``--profile DIR`` also writes a cProfile of every crawl
there (Scrapy's ``--profile``), to compare where the two modes spend their time. ``--also
NAME=PATH`` also crawls with the project checked out at PATH (``git archive COMMIT | tar -x -C
PATH``), interleaved with this one, and prints its figures beside this one's.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from bench.commands import add_also_option, other_checkouts
from bench.crawl_speed import ROOT, Run, measure
from bench.realweb import RealWeb
from bench.seeds_spider import SPIDER_MODULES, SeedsSpider
from tests.helpers import scrapy_command

MODES = {"paced": {}, "unpaced": {"CRAWLER_LIMITER_ENABLED": "False"}}


def seeds(web: RealWeb, pages: int) -> list[str]:
    per_host = -(-pages // len(web.addresses))
    urls = [
        web.url(h, web.pages[(h * per_host + k) % len(web.pages)])
        for h in range(len(web.addresses))
        for k in range(per_host)
    ]
    return urls[:pages]


def crawl(
    mode: str, urls: list[str], folder: Path, timeout: float, profile: Path | None = None, project: Path = ROOT
) -> Run:
    """One crawl of ``urls`` in ``mode`` with the project at ``project``."""
    seeds_file = folder / "seeds.txt"
    seeds_file.write_text("\n".join(urls) + "\n")
    database = folder / f"{mode}-{time.monotonic_ns()}.db"
    settings = {
        "SPIDER_MODULES": SPIDER_MODULES,
        "CLOSESPIDER_TIMEOUT": f"{timeout:g}",
        "DATABASE_URL": f"sqlite:///{database}",
        "LOG_LEVEL": "WARNING",
        **MODES[mode],
    }
    profiled = ["--profile", str(profile)] if profile else []
    command = scrapy_command("crawl", SeedsSpider.name, *profiled, "-a", f"seeds_file={seeds_file}", settings=settings)

    def pages() -> int:
        with sqlite3.connect(database) as connection:
            (answered,) = connection.execute("SELECT count(*) FROM pages WHERE http_status = 200").fetchone()
        database.unlink()
        return answered

    return measure(mode, command, project, pages, project)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--pages", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=900.0, help="time budget of one crawl")
    parser.add_argument("--profile", type=Path, help="write a cProfile of every crawl into this folder")
    parser.add_argument("--robots", choices=("served", "absent", "both"), default="both")
    add_also_option(parser)
    args = parser.parse_args()
    if args.pages < args.hosts:
        parser.error("--pages must be at least --hosts: every host is given seeds")
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    projects = other_checkouts(args) | {"crawler": ROOT}
    variants = ("served", "absent") if args.robots == "both" else (args.robots,)
    medians = [measure_variant(robots, projects, args) for robots in variants]
    for lines in medians:
        print("\n".join(lines))


def measure_variant(robots: str, projects: dict[str, Path], args: argparse.Namespace) -> list[str]:
    """Every run of every project with the hosts' robots.txt ``robots``; the lines of medians."""
    runs: dict[str, list[Run]] = {name: [] for name in projects}
    with RealWeb(args.hosts, crawl_delay=None, robots=robots == "served") as web, tempfile.TemporaryDirectory() as tmp:
        urls = seeds(web, args.pages)
        for n in range(args.runs):
            # Modes and projects alternated, so that the machine's load falls on all alike.
            for name, project in projects.items():
                for mode in MODES:
                    profile = args.profile / f"{name}-{robots}-{mode}-{n + 1}.prof" if args.profile else None
                    run = crawl(mode, urls, Path(tmp), args.timeout, profile, project)
                    complete = run.pages == len(urls)
                    if complete:
                        runs[name].append(run)
                    print(
                        f"run {n + 1} {name:10} robots.txt {robots:6} {mode:8} {run.pages:6d} pages  "
                        f"{run.wall:7.1f} s  {run.cpu:7.1f} s CPU  {run.cpu_ms_per_page:6.2f} ms/page  "
                        f"{run.most_files:5d} files open at most"
                        + ("" if complete else f"  INCOMPLETE: {len(urls)} seeded, left out of the medians"),
                        flush=True,
                    )
    lines = [f"\n{args.hosts} hosts, {args.pages} pages, robots.txt {robots}, medians of {args.runs}:"]
    for name, done in runs.items():
        counted = {mode: sum(r.name == mode for r in done) for mode in MODES}
        if not all(counted.values()):
            lines.append(f"  {name}: no ratio, a mode has no complete crawl (complete crawls: {counted})")
            continue

        def median(mode: str, value: str, done: list[Run] = done) -> float:
            return statistics.median(getattr(r, value) for r in done if r.name == mode)

        if min(counted.values()) < args.runs:
            lines.append(f"  {name}: medians of the complete crawls only: {counted}")
        paced, unpaced = median("paced", "cpu_ms_per_page"), median("unpaced", "cpu_ms_per_page")
        lines.append(
            f"  {name}: CPU per page paced {paced:.2f} ms, unpaced {unpaced:.2f} ms, ratio {paced / unpaced:.2f}x"
        )
        lines.append(
            f"  {name}: wall time paced {median('paced', 'wall'):.1f} s, unpaced {median('unpaced', 'wall'):.1f} s"
        )
    return lines


if __name__ == "__main__":
    main()

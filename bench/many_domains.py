"""What politeness costs with many domains: CPU per page of the same crawl with the default
politeness (1 s per domain, robots.txt, the limiter) and with pacing off, on nginx serving the
Python documentation gzip-compressed on many loopback hosts (``bench/realweb.py``).

    .venv/bin/python -m bench.many_domains [--hosts 1000] [--pages 3000] [--runs 3] [--profile DIR]

Each host is given the same number of pages as seeds (a rotation through the corpus, the same
in both crawls) and nothing else is followed (``bench/seeds_spider.py``), so both crawls fetch
exactly the same pages: with the links spider, links found early filled the page budget before
later seeds were scheduled, and which ones depended on the pacing. CPU is the crawl process's own (user + system).
Prints every run, then medians of ``--runs``: CPU ms per page paced and unpaced, their ratio,
and the wall time of the paced crawl. ``--profile DIR`` also writes a cProfile of every crawl
there (Scrapy's ``--profile``), to compare where the two modes spend their time.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.crawl_speed import ROOT, Run, measure
from bench.realweb import RealWeb
from bench.seeds_spider import SPIDER_MODULES, SeedsSpider

MODES = {"paced": {}, "unpaced": {"CRAWLER_LIMITER_ENABLED": "False"}}


def seeds(web: RealWeb, pages: int) -> list[str]:
    per_host = -(-pages // len(web.addresses))
    urls = [
        web.url(h, web.pages[(h * per_host + k) % len(web.pages)])
        for h in range(len(web.addresses))
        for k in range(per_host)
    ]
    return urls[:pages]


def crawl(mode: str, urls: list[str], folder: Path, timeout: float, profile: Path | None = None) -> Run:
    seeds_file = folder / "seeds.txt"
    seeds_file.write_text("\n".join(urls) + "\n")
    database = folder / f"{mode}-{time.monotonic_ns()}.db"
    command = [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        SeedsSpider.name,
        *(["--profile", str(profile)] if profile else []),
        "-a",
        f"seeds_file={seeds_file}",
        "-s",
        f"SPIDER_MODULES={SPIDER_MODULES}",
        "-s",
        f"CLOSESPIDER_TIMEOUT={timeout:g}",
        "-s",
        f"DATABASE_URL=sqlite:///{database}",
        "-s",
        "LOG_LEVEL=WARNING",
    ]
    for name, value in MODES[mode].items():
        command += ["-s", f"{name}={value}"]

    def pages() -> int:
        with sqlite3.connect(database) as connection:
            (answered,) = connection.execute("SELECT count(*) FROM pages WHERE http_status = 200").fetchone()
        database.unlink()
        return answered

    return measure(mode, command, ROOT, pages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--pages", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=900.0, help="time budget of one crawl")
    parser.add_argument("--profile", type=Path, help="write a cProfile of every crawl into this folder")
    args = parser.parse_args()
    if args.pages < args.hosts:
        parser.error("--pages must be at least --hosts: every host is given seeds")
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    runs: list[Run] = []
    with RealWeb(args.hosts, crawl_delay=None) as web, tempfile.TemporaryDirectory() as tmp:
        urls = seeds(web, args.pages)
        for n in range(args.runs):
            for mode in MODES:  # alternated, so that the machine's load falls on both alike
                profile = args.profile / f"{mode}-{n + 1}.prof" if args.profile else None
                run = crawl(mode, urls, Path(tmp), args.timeout, profile)
                runs.append(run)
                print(
                    f"run {n + 1} {mode:8} {run.pages:6d} pages  {run.wall:7.1f} s  {run.cpu:7.1f} s CPU  {run.cpu_ms_per_page:6.2f} ms/page",
                    flush=True,
                )

    def median(mode: str, value: str) -> float:
        return statistics.median(getattr(r, value) for r in runs if r.name == mode)

    paced, unpaced = median("paced", "cpu_ms_per_page"), median("unpaced", "cpu_ms_per_page")
    print(f"\n{args.hosts} hosts, {args.pages} pages, medians of {args.runs}:")
    print(f"  CPU per page: paced {paced:.2f} ms, unpaced {unpaced:.2f} ms, ratio {paced / unpaced:.2f}x")
    print(f"  wall time: paced {median('paced', 'wall'):.1f} s, unpaced {median('unpaced', 'wall'):.1f} s")


if __name__ == "__main__":
    main()

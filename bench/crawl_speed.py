"""Crawl speed on link-heavy pages: this project's full stack against a stock Scrapy
``CrawlSpider``, measured in the same run on the same local test web.

    .venv/bin/python -m bench.crawl_speed [--pages 2000] [--links 300] [--runs 3]

Politeness is off for both (no delay, no robots.txt), with the same concurrency. The crawler
runs in its own process; its CPU time is read from the kernel (``RUSAGE_CHILDREN``), so the
test web's own CPU does not count. Medians over the runs; the ratio is of pages per CPU second
(pages/s per core) and of pages per wall second.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import scrapy_command
from tests.testweb import TestWeb

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Run:
    name: str
    pages: int
    wall: float
    cpu: float
    most_files: int = 0
    """The most files (sockets among them) the crawl held open at once, sampled twice a second."""

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.wall

    @property
    def cpu_ms_per_page(self) -> float:
        return 1000 * self.cpu / self.pages

    @property
    def pages_per_cpu_second(self) -> float:
        return self.pages / self.cpu


def measure(name: str, command: list[str], cwd: Path, pages: Callable[[], int], project: Path = ROOT) -> Run:
    """Run ``command`` with ``project`` importable and time it; ``pages()`` counts, afterwards,
    the pages it fetched. The project's modules and the stock spider are byte-compiled first, as
    installed code is: with ``PYTHONDONTWRITEBYTECODE`` set, each run would compile them again."""
    compileall.compile_dir(project / "crawler", quiet=1)
    compileall.compile_file(ROOT / "bench" / "stock_crawlspider.py", quiet=1)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    most_files = 0
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(
            command, cwd=cwd, stdout=output, stderr=output, env={**os.environ, "PYTHONPATH": str(project)}
        )
        while process.poll() is None:
            most_files = max(most_files, _open_files(process.pid))
            time.sleep(0.5)
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if process.returncode != 0:
            output.seek(0)
            raise SystemExit(f"{name} failed:\n{output.read().decode(errors='replace')[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(name, pages(), wall, cpu, most_files)


def _open_files(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:  # it ended meanwhile
        return 0


def print_run(i: int, r: Run) -> None:
    print(
        f"run {i + 1} {r.name:8} {r.pages:6d} pages {r.wall:7.2f} s wall {r.cpu:7.2f} s CPU "
        f"{r.pages_per_second:7.1f} pages/s {r.cpu_ms_per_page:6.2f} ms CPU/page",
        flush=True,
    )


def print_medians(runs: dict[str, list[Run]]) -> None:
    """Medians per crawler, and the ratios of the crawler (and any other) to stock Scrapy."""

    def median(name: str, attribute: str) -> float:
        return statistics.median(getattr(r, attribute) for r in runs[name])

    print(f"{'':10}{'pages':>8}{'pages/s':>10}{'CPU ms/page':>14}{'pages/CPU-s':>14}")
    for name in runs:
        print(
            f"{name:10}{median(name, 'pages'):8.0f}{median(name, 'pages_per_second'):10.1f}"
            f"{median(name, 'cpu_ms_per_page'):14.1f}{median(name, 'pages_per_cpu_second'):14.1f}"
        )
    for name in (n for n in runs if n != "stock"):
        per_core = median(name, "pages_per_cpu_second") / median("stock", "pages_per_cpu_second")
        wall = median(name, "pages_per_second") / median("stock", "pages_per_second")
        print(f"ratio {name}/stock: {per_core:.2f}x pages/s per core, {wall:.2f}x pages/s wall")


def unpaced_settings(concurrency: int) -> list[str]:
    """``-s`` options shared by both crawlers: politeness off, the same concurrency."""
    common = {
        "CONCURRENT_REQUESTS": str(concurrency),
        "CONCURRENT_REQUESTS_PER_DOMAIN": str(concurrency),
        "DOWNLOAD_DELAY": "0",
        "CRAWLER_LIMITER_ENABLED": "False",
        "ROBOTSTXT_OBEY": "False",
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": "False",
    }
    return [arg for name, value in common.items() for arg in ("-s", f"{name}={value}")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--links", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()

    # No rate of new URLs per site: an unpaced crawl finds the site's 2,000 URLs in a fraction of
    # a second, and this crawler would skip most of them where stock Scrapy fetches them.
    settings = [*unpaced_settings(args.concurrency), "-s", "CRAWLER_INGEST_RATE_PER_SITE=0"]
    runs: dict[str, list[Run]] = {"stock": [], "crawler": []}
    with (
        TestWeb({"heavy": f"heavy:pages={args.pages},links={args.links}"}) as web,
        tempfile.TemporaryDirectory() as tmp,
    ):
        url = web.url("heavy")

        def pages() -> int:
            return sum(1 for entry in web.log("heavy") if entry.status == 200 and entry.path != "/robots.txt")

        stock = scrapy_command("runspider", str(ROOT / "bench" / "stock_crawlspider.py"), "-a", f"url={url}", *settings)
        for i in range(args.runs):
            database = f"sqlite:///{tmp}/bench-{i}.db"
            ours = scrapy_command("crawl", "links", "-a", f"url={url}", "-a", "max_depth=100", *settings)
            ours += ["-s", f"DATABASE_URL={database}"]
            for name, command, cwd in (("stock", stock, Path(tmp)), ("crawler", ours, ROOT)):
                web.clear()
                runs[name].append(measure(name, command, cwd, pages))
                print_run(i, runs[name][-1])

    print(
        f"\nlink-heavy pages: {args.pages} pages, {args.links} links each, concurrency {args.concurrency}, "
        f"medians of {args.runs} runs"
    )
    print_medians(runs)


if __name__ == "__main__":
    main()

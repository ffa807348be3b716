"""CPU per page on a real corpus: this project's full stack against a stock Scrapy
``CrawlSpider``, both crawling the same documentation site served gzip-compressed by nginx.

    .venv/bin/python -m bench.real_corpus [--runs 3] [--database sqlite|postgresql] [--profile DIR]
                                          [--also NAME=PATH ...] [--crawler-only] [--warc] [--twins-off]
                                          [--https] [--floor]

The site is ``bench.realweb``'s (the Python 3.11 documentation of Debian, 530 pages of 9 KB to
2.5 MB, ``Content-Type: text/html`` without a charset, gzip). Politeness is off for both (no
delay, no robots.txt) with the same concurrency, as in ``bench.crawl_speed``. The crawler stores
every row with its body (SQLite by default, or a fresh PostgreSQL database). CPU time is the
crawl process's own, so nginx's does not count. ``--profile DIR`` also writes a cProfile of
every crawler run there (Scrapy's ``--profile``). ``--also NAME=PATH`` also runs the crawler of
another checkout of this project (``git archive main | tar -x -C PATH``), interleaved with the
others, for before/after figures of a change; repeat it for several. ``--warc`` also runs this
crawler writing WARC files (``CRAWLER_WARC_DIR``), reported as ``warc``, with the bytes of WARC
per page. ``--twins-off`` also runs this crawler with ``CRAWLER_TWINS_ENABLED=False`` (no SimHash,
no judging, no soft-404 probe), reported as ``twins_off``: what twin detection costs per page.
``--https`` serves the site over TLS (a self-signed certificate, not verified by either crawler,
as Scrapy does not by default), as most of the web is. ``--floor`` also runs stock Scrapy
fetching every URL of the corpus (those the crawl does not reach by links too) and doing nothing
with them (``bench/stock_fetch_only.py``), reported as ``floor``, and the same with this project's ``CompressedBodyMiddleware`` in place of Scrapy's
(``floor_gzip``): what Scrapy's machinery costs a page before any crawler's work, against which
the crawler's margin is read.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import uuid
from pathlib import Path

import psycopg

from bench.commands import add_also_option, other_checkouts
from bench.crawl_speed import ROOT, Run, measure, print_medians, print_run, unpaced_settings
from bench.realweb import RealWeb, exit_on_sigterm
from tests.helpers import scrapy_command

POSTGRES = "postgresql://postgres@127.0.0.1:5432"
PROJECT_DECOMPRESSION = {
    "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
    "crawler.middlewares.compression.CompressedBodyMiddleware": 590,
}
"""The floor's decompression replaced by this project's (importable: ``measure`` puts the
project on ``PYTHONPATH``)."""


def _fresh_postgres_database() -> str:
    name = f"bench_real_corpus_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return name


def _drop_postgres_database(name: str) -> None:
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--profile", type=Path, help="write a cProfile of every crawler run into this folder")
    parser.add_argument("--crawler-only", action="store_true", help="skip stock Scrapy (profiling)")
    parser.add_argument("--warc", action="store_true", help="also run this crawler writing WARC files")
    parser.add_argument("--twins-off", action="store_true", help="also run this crawler without twin detection")
    parser.add_argument("--https", action="store_true", help="serve the site over TLS")
    parser.add_argument("--floor", action="store_true", help="also run stock Scrapy fetching the pages, doing nothing")
    add_also_option(parser)
    args = parser.parse_args()
    exit_on_sigterm()

    settings = unpaced_settings(args.concurrency)
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    crawlers = {"stock": None} if not args.crawler_only else {}
    crawlers |= other_checkouts(args)
    crawlers["crawler"] = ROOT
    if args.floor:
        crawlers["floor"] = None
        crawlers["floor_gzip"] = None
    if args.warc:
        crawlers["warc"] = ROOT
    if args.twins_off:
        crawlers["twins_off"] = ROOT
    runs: dict[str, list[Run]] = {name: [] for name in crawlers}
    warc_bytes_per_page: list[float] = []
    with RealWeb(1, crawl_delay=None, https=args.https) as web, tempfile.TemporaryDirectory() as tmp:
        url = web.url(0, "/index.html")

        def pages() -> int:
            return sum(1 for r in web.log() if r.status == 200)

        stock = scrapy_command("runspider", str(ROOT / "bench" / "stock_crawlspider.py"), "-a", f"url={url}", *settings)
        urls = Path(tmp) / "urls.txt"
        urls.write_text("".join(web.url(0, page) + "\n" for page in web.pages))
        fetch_only = scrapy_command(
            "runspider", str(ROOT / "bench" / "stock_fetch_only.py"), "-a", f"urls={urls}", *settings
        )
        stock_commands = {
            "stock": stock,
            "floor": fetch_only,
            "floor_gzip": [*fetch_only, "-s", f"DOWNLOADER_MIDDLEWARES={json.dumps(PROJECT_DECOMPRESSION)}"],
        }
        for i in range(args.runs):
            # every other round in reverse order, so that no crawler always runs first or after the same one
            for name, project in list(crawlers.items())[:: -1 if i % 2 else 1]:
                database = None
                if project is None:
                    command, cwd, project = stock_commands[name], Path(tmp), ROOT
                else:
                    if args.database == "postgresql":
                        database = _fresh_postgres_database()
                        database_url = f"{POSTGRES}/{database}"
                    else:
                        database_url = f"sqlite:///{tmp}/{name}-{i}.db"
                    profile = ["--profile", str(args.profile / f"{name}-{i + 1}.prof")] if args.profile else []
                    command = scrapy_command(
                        "crawl", "links", *profile, "-a", f"url={url}", "-a", "max_depth=100", *settings
                    )
                    command += ["-s", f"DATABASE_URL={database_url}"]
                    cwd = project
                warc = Path(tmp) / f"warc-{i}"
                if name == "warc":
                    command += ["-s", f"CRAWLER_WARC_DIR={warc}"]
                if name == "twins_off":
                    command += ["-s", "CRAWLER_TWINS_ENABLED=False"]
                try:
                    web.clear()
                    runs[name].append(measure(name, command, cwd, pages, project))
                    print_run(i, runs[name][-1])
                    if name == "warc":
                        warc_bytes_per_page.append(_bytes_per_page(warc, runs[name][-1].pages))
                        print(f"      warc     {warc_bytes_per_page[-1]:8.0f} bytes of WARC per page", flush=True)
                finally:
                    if database is not None:
                        _drop_postgres_database(database)

    print(
        f"\nreal corpus ({len(web.pages)} HTML pages, gzip, {web.scheme}, {args.database}), concurrency {args.concurrency}, "
        f"medians of {args.runs} runs"
    )
    if "stock" in runs:
        print_medians(runs)
    else:
        for name, measured in runs.items():
            print(f"{name:10} {_median_ms(measured):6.2f} ms CPU/page")
    for name in (n for n in runs if n != "crawler"):
        print(f"CPU per page, {name}/crawler: {_ratios(runs[name], runs['crawler'])}")
    if "floor_gzip" in runs:
        above = _median_ms(runs["crawler"]) - _median_ms(runs["floor_gzip"])
        tenth = f"; a tenth of stock's: {_median_ms(runs['stock']) / 10:.2f} ms CPU/page" if "stock" in runs else ""
        print(f"crawler above the floor (crawler - floor_gzip): {above:.2f} ms CPU/page{tenth}")
    if "twins_off" in runs:
        print(f"CPU per page, twin detection on/off (crawler/twins_off): {_ratios(runs['crawler'], runs['twins_off'])}")
    if warc_bytes_per_page:
        print(f"WARC bytes per page (gzip per record): {statistics.median(warc_bytes_per_page):.0f}")


def _median_ms(runs: list[Run]) -> float:
    return statistics.median(r.cpu_ms_per_page for r in runs)


def _ratios(runs: list[Run], against: list[Run]) -> str:
    """The ratio of the medians of CPU per page, and the median of each round's own ratio (the two
    runs of a round are next to each other in time, so the machine's load varies less between them)."""
    medians = _median_ms(runs) / _median_ms(against)
    rounds = statistics.median(r.cpu_ms_per_page / a.cpu_ms_per_page for r, a in zip(runs, against, strict=True))
    return f"{medians:.3f}x (median of the rounds' ratios {rounds:.3f}x)"


def _bytes_per_page(folder: Path, pages: int) -> float:
    """Bytes of the WARC files in ``folder`` per page fetched (their indexes not counted)."""
    return sum(path.stat().st_size for path in folder.glob("*.warc.gz")) / pages


if __name__ == "__main__":
    main()

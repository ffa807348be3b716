"""Twins on a real corpus: the Python documentation (``bench.realweb``, served by nginx) crawled
with the crawler's defaults, then every page's SimHash held against its text hash.

    .venv/bin/python -m bench.twins_corpus [--concurrency 16]

Prints the rows by status; every ``duplicate`` with its twin, their distance, and whether their
texts are the same (text hash) or else how much of their words differ (from the corpus files);
the distribution of each kept page's distance to its closest other page (the margin a
``CRAWLER_TWIN_MAX_DISTANCE`` leaves); the pages with the same text hash that were not found
twins; and the CPU of the SimHash alone, per page, over the corpus's texts squashed and in UTF-8
as the extraction hands them over (``simhash_of_utf8``: what the crawl pays for it).
"""

from __future__ import annotations

import argparse
import difflib
import gzip
import resource
import sqlite3
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

from bench.crawl_speed import ROOT, unpaced_settings
from bench.realweb import RealWeb, exit_on_sigterm
from crawler.extraction import extract_page
from crawler.identity import UrlNormalizer
from crawler.twins.simhash import COMPILED, distance, simhash_of_utf8
from tests.helpers import scrapy_command

COLUMNS = ("url", "status", "content_hash", "simhash", "duplicate_of", "error")


def _crawl(web: RealWeb, database: Path, concurrency: int) -> list[dict[str, str]]:
    url = web.url(0, "/index.html")
    command = scrapy_command(
        "crawl", "links", "-a", f"url={url}", "-a", "max_depth=100", *unpaced_settings(concurrency)
    )
    command += ["-s", f"DATABASE_URL=sqlite:///{database}"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(result.stderr[-3000:])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"the crawl: {cpu:.1f} s of CPU (one run: bench.real_corpus measures CPU per page)")
    with sqlite3.connect(database) as connection:
        rows = connection.execute(f"SELECT {', '.join(COLUMNS)} FROM pages").fetchall()
    return [dict(zip(COLUMNS, row)) for row in rows]


def _texts(web: RealWeb, paths: list[str]) -> dict[str, str]:
    """The visible text of each page at ``paths``, as the crawler extracts it: those the crawl
    fetched, with the one the corpus has only compressed (its changelog, the longest text)."""
    normalize = UrlNormalizer([])
    texts = {}
    for path in paths:
        file = web.root / path.lstrip("/")
        html = file.read_bytes() if file.exists() else gzip.decompress(Path(f"{file}.gz").read_bytes())
        texts[path] = extract_page(html, f"http://corpus{path}", normalize).text
    return texts


def _path(url: str) -> str:
    return urlsplit(url).path


def _words_apart(a: str, b: str) -> float:
    return 1 - difflib.SequenceMatcher(None, a.split(), b.split(), autojunk=False).ratio()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    exit_on_sigterm()
    with RealWeb(1, crawl_delay=None) as web, tempfile.TemporaryDirectory() as tmp:
        rows = _crawl(web, Path(tmp) / "corpus.db", args.concurrency)
        texts = _texts(web, [_path(row["url"]) for row in rows if row["status"] in ("fetched", "duplicate")])
    print(f"{len(rows)} rows: {dict(Counter(row['status'] for row in rows))}")
    for row in rows:
        if row["status"] not in ("fetched", "duplicate"):
            print(f"  {row['status']} {_path(row['url'])}: {row['error']}")
    by_url = {row["url"]: row for row in rows}
    duplicates = [row for row in rows if row["status"] == "duplicate"]
    print(f"\n{len(duplicates)} duplicates (distance, same text hash, words that differ):")
    for row in duplicates:
        twin = by_url[row["duplicate_of"]]
        apart = distance(int(row["simhash"], 16), int(twin["simhash"], 16))
        same = row["content_hash"] == twin["content_hash"]
        words = "" if same else f"{_words_apart(texts[_path(row['url'])], texts[_path(twin['url'])]):.1%}"
        print(
            f"  {apart:2d} {'same text' if same else 'other text':10} {words:>6}  {_path(row['url'])} -> {_path(twin['url'])}"
        )
    kept = {row["url"]: int(row["simhash"], 16) for row in rows if row["status"] == "fetched" and row["simhash"]}
    closest = {url: min(distance(fp, other) for o, other in kept.items() if o != url) for url, fp in kept.items()}
    print(
        f"\nclosest other kept page, bits apart ({len(kept)} pages): {dict(sorted(Counter(closest.values()).items()))}"
    )
    same_text = Counter(row["content_hash"] for row in rows if row["status"] == "fetched")
    print(f"kept pages sharing a text hash with another kept page: {sum(n for n in same_text.values() if n > 1)}")
    squashed = [" ".join(text.split()).encode() for text in texts.values()]
    started = time.process_time()
    for text in squashed:
        simhash_of_utf8(text)
    per_page = (time.process_time() - started) / len(squashed) * 1000
    average = statistics.mean(len(text.split()) for text in squashed)
    compiled = "compiled" if COMPILED else "in Python: the compiled one is not built (scripts/compile.sh)"
    print(
        f"SimHash ({compiled}): {per_page:.3f} ms of CPU a page ({len(squashed)} pages, {average:.0f} words on average)"
    )


if __name__ == "__main__":
    main()

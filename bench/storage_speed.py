"""Pipeline rows/s into PostgreSQL (and SQLite) with 20 KB bodies.

    .venv/bin/python -m bench.storage_speed [--rows 20000] [--runs 3]
        [--postgres postgresql://postgres@127.0.0.1:5432/postgres]

Feeds PageItems through the real ``StoragePipeline`` (batches of 100, upserts) into a fresh
database and times it from the first item to the end of ``close_spider`` (everything
committed). Medians over the runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime

import psycopg
from scrapy.utils.test import get_crawler

from crawler.identity import surt_key, url_hash
from crawler.items import PageItem
from crawler.pipelines.storage import StoragePipeline
from crawler.spiders.links import LinksSpider
from tests.helpers import project_settings


def _items(count: int) -> list[PageItem]:
    body = os.urandom(10 * 1024).hex().encode()  # 20 KB
    now = datetime.now(UTC)
    items = []
    for n in range(count):
        url = f"https://bench.example/page/{n}"
        items.append(
            PageItem(
                url=url,
                url_hash=url_hash(url),
                surt_key=surt_key(url),
                domain="bench.example",
                status="fetched",
                crawled_at=now,
                http_status=200,
                content_type="text/html",
                content_length=len(body),
                title=f"Page {n}",
                text="words " * 300,
                body=body,
                links_count=100,
                depth=2,
                job_id="bench",
            )
        )
    return items


async def _run(database_url: str, items: list[PageItem], tmp: str) -> float:
    crawler = get_crawler(
        LinksSpider, project_settings(DATABASE_URL=database_url, CRAWLER_UNSAVED_ROWS_DIR=tmp, LOG_LEVEL="WARNING")
    )
    crawler.spider = LinksSpider.from_crawler(
        crawler, url="https://bench.example/", job_id=f"bench-{uuid.uuid4().hex[:8]}"
    )
    pipeline = StoragePipeline.from_crawler(crawler)
    await pipeline.open_spider()
    started = time.perf_counter()
    for item in items:
        await pipeline.process_item(item)
    await pipeline.close_spider()
    await pipeline.spider_closed(pipeline.spider, "finished")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    items = _items(args.rows)
    results: dict[str, list[float]] = {"postgresql": [], "sqlite": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            name = f"crawler_bench_{uuid.uuid4().hex[:8]}"
            with psycopg.connect(args.postgres, autocommit=True) as admin:
                admin.execute(f"CREATE DATABASE {name}")
            try:
                seconds = asyncio.run(_run(args.postgres.rsplit("/", 1)[0] + f"/{name}", items, tmp))
            finally:
                with psycopg.connect(args.postgres, autocommit=True) as admin:
                    admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
            results["postgresql"].append(args.rows / seconds)
            results["sqlite"].append(args.rows / asyncio.run(_run(f"sqlite:///{tmp}/bench-{i}.db", items, tmp)))
            print(
                f"run {i + 1}: PostgreSQL {results['postgresql'][-1]:8.0f} rows/s   SQLite {results['sqlite'][-1]:8.0f} rows/s",
                flush=True,
            )
    print(f"\n{args.rows} rows with 20 KB bodies, batches of 100, medians of {args.runs} runs:")
    for backend, rates in results.items():
        print(f"{backend:11} {statistics.median(rates):8.0f} rows/s")


if __name__ == "__main__":
    main()

"""The batching storage pipeline, in process, against real databases."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

from scrapy.utils.test import get_crawler

from crawler.identity import url_hash
from crawler.items import PageItem, SitemapEntryItem
from crawler.outcomes import page_item
from crawler.pipelines.storage import StoragePipeline
from crawler.spiders.links import LinksSpider
from tests.helpers import Database, project_settings


def _pipeline(database: Database, tmp_path: Path, **settings) -> StoragePipeline:
    crawler = get_crawler(
        LinksSpider,
        project_settings(DATABASE_URL=database.url, CRAWLER_UNSAVED_ROWS_DIR=str(tmp_path), **settings),
    )
    crawler.spider = LinksSpider.from_crawler(crawler, url="http://e.example/", job_id="test-job")
    return StoragePipeline.from_crawler(crawler)


def _page(n: int, status: str | None = "fetched", **fields) -> PageItem:
    return page_item(f"http://e.example/{n}", status, job_id="test-job", **fields)


def _entry(n: int) -> SitemapEntryItem:
    url = f"http://e.example/{n}"
    return SitemapEntryItem(
        "http://e.example/sitemap.xml", url, url_hash(url), None, "daily", 0.5, "test-job", datetime.now(UTC)
    )


def test_rows_are_batched_by_size(database: Database, tmp_path: Path) -> None:
    pipeline = _pipeline(database, tmp_path, CRAWLER_BATCH_SECONDS=60)

    async def scenario() -> list[int]:
        await pipeline.open_spider()
        seen = []
        for n in range(250):
            await pipeline.process_item(_page(n))
            await asyncio.sleep(0)
            seen.append(pipeline.stats.get_value("storage/batches", 0))
        for n in range(30):
            await pipeline.process_item(_entry(n))
        await pipeline.close_spider()
        await pipeline.spider_closed(pipeline.spider, "finished")
        return seen

    batches_seen = asyncio.run(scenario())
    assert database.query("SELECT COUNT(*) FROM pages") == [(250,)]
    assert database.query("SELECT COUNT(*) FROM sitemap_entries") == [(30,)]
    assert batches_seen[98] == 0  # nothing written before the 100th row
    assert pipeline.stats.get_value("storage/batches") == 3
    assert pipeline.stats.get_value("storage/rows_written") == 280
    job = database.query("SELECT id, status, rows_written, pages_fetched FROM crawl_jobs")
    assert job == [("test-job", "finished", 280, 250)]


def test_rows_are_flushed_after_the_batch_interval(database: Database, tmp_path: Path) -> None:
    pipeline = _pipeline(database, tmp_path, CRAWLER_BATCH_SECONDS=0.2)

    async def scenario() -> int:
        await pipeline.open_spider()
        for n in range(5):
            await pipeline.process_item(_page(n))
        await asyncio.sleep(1.0)
        written = pipeline.stats.get_value("storage/rows_written", 0)
        await pipeline.close_spider()
        await pipeline.spider_closed(pipeline.spider, "finished")
        return written

    assert asyncio.run(scenario()) == 5


def test_a_row_the_database_refuses_does_not_block_the_batch(database: Database, tmp_path: Path) -> None:
    pipeline = _pipeline(database, tmp_path)

    async def scenario() -> None:
        await pipeline.open_spider()
        for n in range(10):
            await pipeline.process_item(_page(n))
        await pipeline.process_item(_page(99, status=None))  # violates NOT NULL
        await pipeline.close_spider()
        await pipeline.spider_closed(pipeline.spider, "finished")

    asyncio.run(scenario())
    assert database.query("SELECT COUNT(*) FROM pages") == [(10,)]
    unsaved = [json.loads(line) for line in (tmp_path / "unsaved-rows-test-job.jsonl").read_text().splitlines()]
    assert len(unsaved) == 1 and unsaved[0]["table"] == "pages"
    assert unsaved[0]["row"][0] == "http://e.example/99" and "null" in unsaved[0]["reason"].lower()
    assert pipeline.stats.get_value("storage/rows_refused") == 1

"""``scrapy prune``: delete what the retention settings (``CRAWLER_RETAIN_*``) no longer keep,
in bounded batches, then give the space back (PostgreSQL ``VACUUM (ANALYZE)``, SQLite's
incremental vacuum). Prints what it removed; exits 1 with a one-line reason when the database
cannot be reached. Safe to run from cron while crawls run."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from datetime import UTC, datetime

from scrapy.commands import ScrapyCommand

from crawler.storage import StorageUnavailable, open_backend


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def short_desc(self) -> str:
        return "Delete rows the retention settings (CRAWLER_RETAIN_*) no longer keep"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        started = time.monotonic()
        try:
            removed, target = asyncio.run(self._prune())
        except StorageUnavailable as exc:
            print(f"prune: the database is unavailable: {exc}", file=sys.stderr)
            self.exitcode = 1
            return
        for name, count in removed.items():
            print(f"{name}: {count} removed")
        print(f"pruned {target} in {time.monotonic() - started:.1f} s")

    async def _prune(self) -> tuple[dict[str, int], str]:
        # Imported here: Scrapy imports every command of the project, and a crawl prunes nothing.
        from crawler.storage.retention import RetentionPolicy, prune

        backend = open_backend(self.settings.get("DATABASE_URL"))
        await backend.open()
        try:
            return await prune(backend, RetentionPolicy.from_settings(self.settings), datetime.now(UTC)), backend.target
        finally:
            await backend.close()

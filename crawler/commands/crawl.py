"""``scrapy crawl``, with usage errors in one line and an exit status that says how the job
ended (the table is in the README; ``crawler.exitcodes``).

Scrapy's own command exits 1 only when the crawl could not start; a cron job also needs to
know that the database was unreachable, that every seed was down, or that the same crawl was
already running. The spider's close reason says which.
"""

from __future__ import annotations

import argparse
import sys

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.spiderloader import get_spider_loader

from crawler.compat import command_crawler
from crawler.exitcodes import BOOTSTRAP_FAILED, USAGE, exit_status
from crawler.frontier.seeds import SeedError


class Command(ScrapyCrawlCommand):
    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        if len(args) == 1:
            # Before Scrapy starts (and logs its banner): a usage error is one line.
            problem = self._usage_problem(args[0], opts.spargs)
            if problem:
                print(f"scrapy crawl: error: {problem}", file=sys.stderr)
                raise SystemExit(USAGE)

    def _usage_problem(self, name: str, spargs: dict[str, str]) -> str | None:
        loader = get_spider_loader(self.settings)
        try:
            spidercls = loader.load(name)
        except KeyError:
            return f"unknown spider {name!r} (spiders: {', '.join(sorted(loader.list()))})"
        if hasattr(spidercls, "seeds_from"):
            try:
                spidercls.seeds_from(
                    spargs.get("url"),
                    spargs.get("seeds_file"),
                    spargs.get("crawl") or self.settings.get("CRAWLER_CRAWL_ID"),
                )
            except SeedError as exc:
                return str(exc)
        return None

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            super().run(args, opts)  # Scrapy's own usage errors
            return
        assert self.crawler_process is not None
        crawler = command_crawler(self, args[0])
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        if self.crawler_process.bootstrap_failed:
            self.exitcode = BOOTSTRAP_FAILED
            return
        stats = crawler.stats
        assert stats is not None
        self.exitcode = exit_status(
            stats.get_value("finish_reason"), unsaved_rows=stats.get_value("storage/rows_unsaved", 0)
        )

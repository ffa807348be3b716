"""``scrapy crawl``, with usage errors in one line and an exit status that says how the job
ended (the table is in the README; ``crawler.exitcodes``).

Scrapy's own command exits 1 only when the crawl could not start; a cron job also needs to
know that the database was unreachable, that every seed was down, or that the same crawl was
already running. The spider's close reason says which.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import sys
from pathlib import Path

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.spiderloader import get_spider_loader

from crawler.compat import command_crawler
from crawler.exitcodes import BOOTSTRAP_FAILED, REDIS_UNREACHABLE, USAGE, exit_status
from crawler.frontier.seeds import SeedError
from crawler.guard.proxies import configured_proxies
from crawler.guard.resolver import address_policy
from crawler.redis.reachable import wait_for_redis

logger = logging.getLogger(__name__)


class Command(ScrapyCrawlCommand):
    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        if len(args) == 1:
            # Before Scrapy starts (and logs its banner): a usage error is one line.
            problem = (
                self._usage_problem(args[0], opts.spargs) or self._settings_problem() or self._log_folder_problem()
            )
            if problem:
                print(f"scrapy crawl: error: {problem}", file=sys.stderr)
                raise SystemExit(USAGE)

    def _usage_problem(self, name: str, spargs: dict[str, str]) -> str | None:
        loader = get_spider_loader(self.settings)
        try:
            spidercls = loader.load(name)
        except KeyError:
            return f"unknown spider {name!r} (spiders: {', '.join(sorted(loader.list()))})"
        known = getattr(spidercls, "ARGUMENTS", None)
        unknown = [arg for arg in spargs if known is not None and arg not in known and not arg.startswith("_")]
        if unknown:
            close = difflib.get_close_matches(unknown[0], known, n=1)
            guess = f"did you mean {close[0]}? " if close else ""
            return f"unknown spider argument {unknown[0]!r} ({guess}arguments: {', '.join(sorted(known))})"
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

    def _settings_problem(self) -> str | None:
        """Settings that cannot work together or at all, said before anything starts."""
        settings = self.settings
        try:
            address_policy(settings)
        except ValueError as exc:
            return str(exc)
        if settings.getbool("CRAWLER_HTTP2") and configured_proxies(settings):
            return "CRAWLER_HTTP2 cannot go through a proxy (Scrapy's HTTP/2 handler has no proxy support): use one or the other"
        return None

    def _log_folder_problem(self) -> str | None:
        """Create the folder of ``LOG_FILE`` (a cron job's first run would otherwise end in a
        traceback, mailed by cron, before anything is logged)."""
        log_file = self.settings.get("LOG_FILE")
        if not log_file:
            return None
        try:
            Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return f"cannot create the folder of LOG_FILE {log_file}: {exc.strerror}"
        return None

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            super().run(args, opts)  # Scrapy's own usage errors
            return
        assert self.crawler_process is not None
        redis_url = self.settings.get("REDIS_URL")
        if redis_url and (
            problem := wait_for_redis(
                redis_url, self.settings.getfloat("CRAWLER_REDIS_CONNECT_TIMEOUT"), say=logger.warning
            )
        ):
            logger.error("%s", problem)
            self.exitcode = REDIS_UNREACHABLE
            return
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

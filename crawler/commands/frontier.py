"""``scrapy frontier [CRAWL]``: what a shared crawl's frontier holds, per domain: queued
requests, when the domain is next ready, blocks, delay, concurrency and requests in flight.
Without a crawl id, each shared crawl in this Redis: its totals, its domains (ready, blocked) and
the busiest of them. ``--clear`` deletes a crawl's keys, and the requests it spilled to the
database (``DATABASE_URL``)."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from crawler.redis import redis_enabled

if TYPE_CHECKING:
    from crawler.api.frontier_view import FrontierView
    from crawler.redis.store import FrontierStore

BUSIEST = 3
"""Domains named per crawl in the list of crawls."""


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[CRAWL] [--clear]"

    def short_desc(self) -> str:
        return "Show (or clear) a shared crawl's frontier (REDIS_URL)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--clear", action="store_true", help="delete every key of the crawl and the requests it spilled"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        settings = self.settings
        if not redis_enabled(settings):
            raise UsageError("REDIS_URL is not set: there is no shared frontier to show")
        from crawler.api.frontier_view import FrontierView

        view = FrontierView(settings)
        try:
            if args:
                self._show(view, args[0], opts.clear)
            else:
                self._list_crawls(view)
        finally:
            view.close()

    def _show(self, view: FrontierView, crawl: str, clear: bool) -> None:
        frontier = view.frontier(crawl)
        if clear:
            from crawler.storage import is_postgres

            # The database first: unreachable, it stops the command before any key is gone.
            dropped = asyncio.run(self._forget_spilled(crawl)) if is_postgres(self.database_url) else 0
            print(f"crawl {crawl}: {frontier.clear()} keys deleted, {dropped} spilled requests dropped")
            return
        print(_summary(crawl, frontier))
        print(
            f"{'domain':40} {'queued':>8} {'spilled':>8} {'ready in':>9} {'blocked':>8} {'delay':>7} {'conc.':>5} "
            f"{'in flight':>9}"
        )
        for row in frontier.domains():
            ready = "-" if row["ready_in"] is None else f"{row['ready_in']:.2f}s"
            print(
                f"{row['domain']:40} {row['queued']:>8} {row['spilled']:>8} {ready:>9} {row['blocked_for']:>7.1f}s "
                f"{row['delay']:>6.2f}s {row['concurrency']:>5} {row['in_flight']:>9}"
            )

    @property
    def database_url(self) -> str:
        return str(self.settings.get("DATABASE_URL") or "")

    async def _forget_spilled(self, crawl: str) -> int:
        from crawler.storage import open_backend
        from crawler.storage.spilled_requests import forget_crawl

        backend = open_backend(self.database_url)
        await backend.open()
        try:
            return await forget_crawl(backend, crawl)
        finally:
            await backend.close()

    def _list_crawls(self, view: FrontierView) -> None:
        crawls = view.crawls()
        if not crawls:
            print("no shared crawl in this Redis (a crawl's keys go when it completes)")
            return
        for crawl in crawls:
            frontier = view.frontier(crawl)
            domains = frontier.domains()
            ready = sum(1 for row in domains if row["ready_in"] == 0 and row["queued"])
            blocked = sum(1 for row in domains if row["blocked_for"] > 0)
            busiest = sorted((row for row in domains if row["queued"]), key=lambda row: -row["queued"])[:BUSIEST]
            named = ", ".join(f"{row['domain']} ({row['queued']})" for row in busiest)
            print(_summary(crawl, frontier))
            print(
                f"  {len(domains)} domains, {ready} ready now, {blocked} blocked"
                + (f"; most queued: {named}" if named else "")
            )
        print("scrapy frontier CRAWL shows every domain of one crawl")


def _summary(crawl: str, frontier: FrontierStore) -> str:
    sizes = frontier.sizes()
    return (
        f"crawl {crawl}: {sizes.queued} queued, {sizes.delayed} waiting to retry, "
        f"{sizes.leased} leased, {sizes.reclaimed} leases expired and requeued, {sizes.dead} dead letters, "
        f"{sizes.spilled} queued in PostgreSQL (cold domains)"
    )

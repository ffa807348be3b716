"""Obey operators while the crawl runs, polling the database every
``CRAWLER_CONTROL_POLL_SECONDS`` (0: never), off the reactor:

- ``domain_controls``: per-domain concurrency and minimum delay (over
  ``CRAWLER_DOMAIN_OVERRIDES``), a domain paused (nothing more is sent to it; what is in flight
  finishes) or the whole crawl (domain ``*``: the engine pauses), a reset of what a domain taught
  the limiter (requested after this process started), which is also saved for later jobs;
- ``frontier_inbox``: URLs to crawl, each taken by one process and scheduled as a seed;
- ``crawl_jobs.cancel_requested_at``: the job closes with reason ``cancelled`` (the URLs it
  leaves get ``skipped`` rows).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from scrapy.crawler import Crawler
from scrapy.utils.defer import deferred_from_coro

from crawler.compat import schedule_engine
from crawler.control.operators import Controls, read_controls
from crawler.control.worker import worker_id
from crawler.extensions.heartbeat import Heartbeat
from crawler.extensions.periodic import PeriodicExtension
from crawler.services import CrawlServices
from crawler.storage.inbox import give_back_to_inbox, take_inbox
from crawler.storage.jobs import cancel_requested
from crawler.storage.rows import domain_row

logger = logging.getLogger(__name__)

CANCELLED = "cancelled"
INBOX_BATCH = 100


class CrawlControl(PeriodicExtension):
    SECONDS_SETTING = "CRAWLER_CONTROL_POLL_SECONDS"

    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        self.inbox = crawler.settings.getbool("CRAWLER_INBOX")
        self.controls = Controls()
        self.started_at = datetime.now(UTC)
        self.crawl_paused = False
        self.limiter = CrawlServices.of(crawler).limiter

    async def tick(self) -> bool:
        """Apply what operators ask; False once the job is cancelled."""
        assert self.storage is not None
        backend = self.storage.backend
        if await cancel_requested(backend, self.spider.job_id):
            self._cancel()
            return False
        controls = await read_controls(backend)
        if controls.domains != self.controls.domains:
            await self._apply(controls)
        for domain, at in controls.resets.items():
            # A reset names one domain; a pattern's would reset no real one.
            if "*" not in domain and at > max(self.controls.resets.get(domain, self.started_at), self.started_at):
                await self._reset(domain)
        self.controls = controls
        if self.inbox:
            await self._take_inbox()
        return True

    async def _apply(self, controls: Controls) -> None:
        table = self.limiter.controls.with_runtime(controls.domains)
        await self.limiter.set_controls(table)
        logger.info("Domain controls applied: %s", {p: c for p, c in controls.domains.items()} or "none")
        if table.crawl_paused != self.crawl_paused:
            self._pause_crawl(table.crawl_paused)

    def _pause_crawl(self, paused: bool) -> None:
        engine = self.crawler.engine
        if engine is None:
            return
        self.crawl_paused = paused
        if paused:
            engine.pause()
        else:
            engine.unpause()
            schedule_engine(self.crawler)
        logger.info("The crawl is %s by an operator", "paused" if paused else "resumed")
        self._set_state("paused" if paused else "running")

    async def _reset(self, domain: str) -> None:
        state = await self.limiter.reset(domain)
        assert self.storage is not None
        # The same row the limiter saves when it learns: later jobs start from the reset too.
        self.storage.outbox.domains[domain] = domain_row(domain, state.learned_delay, state.floor, state.robots_delay)
        self.crawler.stats.inc_value("control/domain_reset_count")
        logger.info("Pacing of %s reset by an operator: delay %.3f s", domain, self.limiter.effective_delay(domain))

    async def _take_inbox(self) -> None:
        assert self.storage is not None
        spider = self.spider
        # A URL taken past the page budget would be dropped: the inbox keeps it for another job.
        limit = min(INBOX_BATCH, spider.pages_left())
        if limit <= 0:
            return
        worker = worker_id(spider.job_id)
        backend = self.storage.backend
        urls = await take_inbox(
            backend, now=datetime.now(UTC), worker=worker, spider=spider.name, crawl=spider.crawl_id, limit=int(limit)
        )
        if not urls:
            return
        engine = self.crawler.engine
        scheduled = 0
        left: list[str] = []
        for url in urls:
            if not spider.budget_left(seed=True):
                left.append(url)  # links planned while it was taken spent the budget
                continue
            # Seeded through the API: in scope, but checked by the address guard as links are.
            for request in spider.seed_requests(spider.seed_urls([url], trusted=False)):
                engine.crawl(request)
                scheduled += 1
        await give_back_to_inbox(backend, worker, left)
        self.crawler.stats.inc_value("control/inbox_taken", len(urls) - len(left))
        logger.info("Took %d URLs from the inbox; %d scheduled as seeds", len(urls) - len(left), scheduled)

    def _cancel(self) -> None:
        engine = self.crawler.engine
        if engine is None:
            return
        logger.warning("Job %s cancelled by an operator", self.spider.job_id)
        self._set_state("closing")
        deferred_from_coro(engine.close_spider_async(reason=CANCELLED))

    def _set_state(self, state: str) -> None:
        heartbeat = self.crawler.get_extension(Heartbeat)
        if heartbeat is not None:
            heartbeat.state = state

"""What both spiders do about traps and twins: discovered URLs judged by the trap rules before
they are queued, fetched pages judged against their site's pages, and each site's soft-404 probe."""

from __future__ import annotations

from typing import Any

from scrapy import Request
from scrapy.http import Response
from scrapy.settings import BaseSettings
from twisted.python.failure import Failure

from crawler.identity import site_of
from crawler.items import PageItem
from crawler.services import CrawlServices
from crawler.traps.guard import TrapGuard
from crawler.twins.judge import TwinJudge

PROBE_PRIORITY = 400
"""Above every page (seeds are 300): a site's probe goes before the pages that may be soft 404s."""


class TrapsAndTwins:
    crawler: Any
    logger: Any
    recorder: Any
    traps: TrapGuard
    twins: TwinJudge | None
    probes_soft_404: bool

    def configure_twins(self, services: CrawlServices, settings: BaseSettings) -> None:
        self.traps = services.traps
        self.twins = services.twins
        self.probes_soft_404 = self.twins is not None and settings.getbool("CRAWLER_SOFT404_PROBE")

    def trap_refusal(self, url: str) -> str | None:
        """Why the trap rules refuse a discovered URL, or None."""
        trap = self.traps.refusal(url)
        if trap is not None:
            self.crawler.stats.inc_value("traps/filtered")
            self.logger.debug("Not following %s: %s", url, trap)
        return trap

    def queued(self, url: str) -> None:
        """A page's request was made: its pattern counts it, and its site is probed if new (in
        a crawl: ``scrapy seed`` makes requests too, with no engine to send a probe)."""
        self.traps.queued(url)
        if self.probes_soft_404 and self.crawler.crawling:
            self._probe_soft_404(url)

    async def judge_twins(self, item: PageItem) -> bool:
        """Judge a fetched page against its site's pages; whether its links are followed."""
        if self.twins is None:
            return True
        twin = await self.twins.judge(item, seed=item.discovered_via == "seed")
        if twin is not None:
            self.crawler.stats.inc_value(f"twins/{item.status}")
        return self.twins.follows(item, twin)

    def _probe_soft_404(self, url: str) -> None:
        """Ask for a path the site of ``url`` does not have, once per site and crawl."""
        assert self.twins is not None
        probes = self.twins.probes

        def probe() -> None:
            self.crawler.stats.inc_value("twins/soft404_probes")
            request = Request(
                probes.url(url),
                callback=self.soft_404_probed,
                errback=self.soft_404_probe_failed,
                priority=PROBE_PRIORITY,
                dont_filter=True,
                # stays in this process, which claimed the site: it has no row to end a lease
                meta={"discovered_via": "probe", "soft_404_probe": True},
            )
            self.crawler.engine.crawl(request)

        probes.claim(site_of(url), probe)

    async def soft_404_probed(self, response: Response) -> None:
        """A site answered its probe with a page: pages that say the same are soft 404s. Its
        fingerprint joins the site's index (not an answer after a redirect: the site sends
        missing pages to another page, as redirects already say)."""
        assert self.twins is not None
        item, _ = await self.recorder.fetched(response)
        if item.status != "fetched" or item.simhash is None or response.meta.get("redirect_urls"):
            self.crawler.stats.inc_value("twins/soft404_probe/no_page")
            return
        self.crawler.stats.inc_value("twins/soft404_probe/page")
        self.logger.info("%s answers a path it does not have with a page: pages like it are soft 404s", item.url)
        await self.twins.index.find_or_add(site_of(item.url), int(item.simhash, 16), item.url)

    def soft_404_probe_failed(self, failure: Failure) -> None:
        # A 404 (or any failure) is what a site without soft 404s answers.
        self.crawler.stats.inc_value("twins/soft404_probe/no_page")

"""What both spiders share: seeds and job identity from arguments, the crawl budget, URL
identity and scope, re-crawls (only pages that are due, conditionally), and a row for every
outcome."""

from __future__ import annotations

import asyncio
import json
import math
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Self, TypeVar

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.http import Response
from twisted.python.failure import Failure

from crawler.exceptions import NotSent, RobotsUnreachable, TrapRefused
from crawler.extraction import PageData
from crawler.frontier.priority import request_priority
from crawler.frontier.seeds import parse_seeds
from crawler.frontier.unfetched import record_outcome, unfetched_reason
from crawler.http.content import extension_set, ignored_extension
from crawler.identity import InvalidURL, UrlNormalizer
from crawler.identity.crawls import crawl_id
from crawler.items import PageItem
from crawler.outcomes import OutcomeRecorder
from crawler.politeness.slots import LEAVE_AT
from crawler.recrawl.schedule import RevisitPolicy, RevisitSchedule
from crawler.recrawl.stored import StoredPage, StoredPages, history_of
from crawler.recrawl.waiting_reads import WaitingReads
from crawler.services import CrawlServices
from crawler.spiders.backpressure import Backpressure
from crawler.spiders.twins import TrapsAndTwins
from crawler.storage.pages import QUERY_SIZE

T = TypeVar("T")

TURN_SIZE = 200
"""Requests or rows built per reactor turn: a page's thousand links or a sitemap's 50,000
entries are built over many turns, so that responses keep being read meanwhile."""

# Spider arguments that are settings: ``-a max_pages=50`` is ``-s CRAWLER_MAX_PAGES=50``.
ARGUMENT_SETTINGS = {
    "max_pages": "CRAWLER_MAX_PAGES",
    "max_depth": "DEPTH_LIMIT",
    "scope": "CRAWLER_SCOPE",
    "max_time": "CLOSESPIDER_TIMEOUT",
}


_REVISITED_STATUSES = frozenset({"fetched", "noindex", "unchanged", "duplicate"})


@dataclass(slots=True)
class Candidate:
    """A URL the crawl would request if it is due and the budget allows."""

    url: str
    depth: int
    via: str
    referrer: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


class BaseCrawlSpider(TrapsAndTwins, Backpressure, Spider):
    ARGUMENTS = ("url", "seeds_file", "job_id", "crawl", *ARGUMENT_SETTINGS)
    """The spider arguments (``-a NAME=VALUE``) the crawl understands; scrapyd adds its own, which
    start with ``_``."""
    seeds: list[str]
    job_id: str
    default_callbacks = ("parse_page", "page_failed")
    """The callback and errback of most requests, which the shared frontier does not store."""
    follows_links = False
    """Whether the links of a page are followed, and so those stored for pages not fetched again."""

    def __init__(
        self,
        url: str | None = None,
        seeds_file: str | None = None,
        job_id: str | None = None,
        crawl: str | None = None,
        **kwargs: Any,
    ):
        # scrapyd passes its job id as ``_job``
        self.job_id = job_id or kwargs.pop("_job", None) or uuid.uuid4().hex
        super().__init__(**kwargs)
        self.seeds = self.seeds_from(url, seeds_file, crawl)
        self.crawl_id = crawl_id(self.name, self.seeds, crawl)

    @staticmethod
    def seeds_from(url: str | None, seeds_file: str | None, crawl: str | None) -> list[str]:
        """The seeds of the spider's arguments; raises SeedError."""
        # A worker joining a named shared crawl may start without seeds (``scrapy seed`` adds them).
        return parse_seeds(url, seeds_file) if url or seeds_file or not crawl else []

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        for argument, setting in ARGUMENT_SETTINGS.items():
            if argument in kwargs:
                crawler.settings.set(setting, kwargs.pop(argument), priority="spider")
        kwargs.setdefault("crawl", crawler.settings.get("CRAWLER_CRAWL_ID") or None)
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider._configure(crawler)
        return spider

    def _configure(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.normalize = UrlNormalizer(settings.getlist("CRAWLER_TRACKING_PARAMS"))
        self.recorder = OutcomeRecorder(
            settings,
            self.normalize,
            self.job_id,
            settings["BOT_NAME"],
            lambda: crawler.stats.inc_value("extraction/handed_to_thread"),
        )
        self.max_pages = settings.getint("CRAWLER_MAX_PAGES")
        self.max_depth = settings.getint("DEPTH_LIMIT")
        self.max_url_length = settings.getint("URLLENGTH_LIMIT")
        self.services = CrawlServices.of(crawler)
        self.services.name_crawl(self.crawl_id)
        self.scope = self.services.make_scope()
        self.seen: set[str] = set()
        self.pages_scheduled = 0
        """Requests that may download a page: a 304 gives its share of the budget back."""
        self.seeds_unplanned: set[str] = set()
        """Seeds not planned yet, each keeping a page of the budget from discovered links."""
        self.over_budget: dict[str, Candidate] = {}
        """URLs refused for the budget, taken up again when a 304 gives budget back (at most
        every URL the job discovers, as ``seen``)."""
        self.database_had_pages: bool | None = None
        """Whether the database held pages when the job first planned (None: not asked yet)."""
        self.stored_reads = WaitingReads(crawler)
        self.revisits = RevisitSchedule(
            RevisitPolicy(
                min_interval=settings.getfloat("CRAWLER_RECRAWL_MIN_INTERVAL"),
                max_interval=settings.getfloat("CRAWLER_RECRAWL_MAX_INTERVAL"),
                initial_interval=settings.getfloat("CRAWLER_RECRAWL_INITIAL_INTERVAL"),
            ),
            time.time,
        )
        self.conditional = settings.getbool("CRAWLER_RECRAWL_CONDITIONAL")
        self.ignored_extensions = extension_set(settings.getlist("CRAWLER_IGNORED_EXTENSIONS"))
        self.configure_twins(self.services, settings)
        self.configure_backpressure(self.services, settings)

    def seed_urls(self, seeds: Iterable[str] | None = None, trusted: bool = True) -> Iterator[str]:
        """The seeds (the spider's, or ``seeds`` added while it runs) in normal form, each added
        to the crawl's scope and, if ``trusted`` (not seeded through the API), allowed by the
        address guard whatever its address; an invalid seed is logged and skipped."""
        guard = self.services.guard
        for seed in self.seeds if seeds is None else seeds:
            try:
                url = self.normalize(seed)
            except InvalidURL as exc:
                self.logger.error("Invalid seed %r: %s", seed, exc)
                self.crawler.stats.inc_value("seeds/invalid")
                continue
            self.scope.add_seed(url, trusted)
            if guard is not None and trusted:
                guard.allow_seed(url)
            yield url

    async def start(self) -> AsyncIterator[Any]:
        for request in self.seed_requests(self.seed_urls()):
            yield request

    def seed_requests(self, urls: Iterable[str]) -> Iterator[Request]:
        """The first requests of seeds in normal form."""
        for url in urls:
            request = self.page_request(url, depth=0, via="seed")
            if request is not None:
                yield request

    def pages_left(self, seed: bool = False) -> float:
        """Pages of the budget left (for a discovered URL, those no seed waits for); without a
        budget, infinitely many."""
        if not self.max_pages:
            return math.inf
        kept = 0 if seed else len(self.seeds_unplanned)
        return self.max_pages - self.pages_scheduled - kept

    def budget_left(self, seed: bool = False) -> bool:
        return self.pages_left(seed) > 0

    def page_request(
        self,
        url: str,
        *,
        depth: int,
        via: str,
        referrer: str | None = None,
        stored: StoredPage | None = None,
        **meta: Any,
    ) -> Request | PageItem | None:
        """A request for a page not seen before, within the budget, conditional on the stored
        copy if there is one; for a discovered URL whose extension is never fetched (``.pdf``,
        ``.zip``) or that a trap rule refuses, its ``filtered`` row, outside the budget as
        nothing is downloaded; None otherwise."""
        if url in self.seen or not self.budget_left(seed=via == "seed"):
            return None
        self.seen.add(url)
        refusal = self._too_long(url) or (None if via == "seed" else self._refusal(url))
        if refusal is None:
            self.pages_scheduled += 1
        headers = stored.validators() if stored is not None and self.conditional else {}
        if headers:
            meta["handle_httpstatus_list"] = [304]
            self.crawler.stats.inc_value("recrawl/conditional_requests")
        if stored is not None:
            meta["recrawl"] = stored.meta()
        request = Request(
            url,
            callback=self.parse_page,
            errback=self.page_failed,
            priority=request_priority(url, depth, seed=via == "seed"),
            headers=headers or None,
            meta={"depth": depth, "discovered_via": via, "referrer": referrer, **meta},
        )
        if refusal is not None:
            return self.recorder.filtered(request, refusal)
        self.queued(url)
        return request

    def _too_long(self, url: str) -> str | None:
        """Why a URL is not requested for its length (``URLLENGTH_LIMIT``, which Scrapy's
        ``UrlLengthMiddleware`` applied by dropping the request without a trace), or None."""
        if not self.max_url_length or len(url) <= self.max_url_length:
            return None
        self.crawler.stats.inc_value("urllength/request_ignored_count")
        return f"URL longer than {self.max_url_length} characters (URLLENGTH_LIMIT)"

    def _refusal(self, url: str) -> str | None:
        """Why a discovered URL is not requested (an extension never fetched, a trap), or None."""
        extension = ignored_extension(url, self.ignored_extensions)
        if extension is not None:
            self.crawler.stats.inc_value(f"filters/extension/{extension}")
            return f"extension {extension} not fetched"
        return self.trap_refusal(url)

    async def plan(self, candidates: Iterable[Candidate]) -> AsyncIterator[Request | PageItem]:
        """Requests for the candidates that are due. A known page not yet due is not requested
        (stat ``recrawl/not_due``, no row); the links stored for it are candidates in turn, so
        discovery goes on through the part of the site already known. Stored state is read in
        batches."""
        pending = deque(candidates)
        while pending or (self.over_budget and self.budget_left()):
            if not pending:
                # Seeds first, as when they were planned the first time.
                pending.extend(sorted(self.over_budget.values(), key=lambda candidate: candidate.via != "seed"))
                self.over_budget.clear()
            batch: dict[str, Candidate] = {}
            while pending and len(batch) < QUERY_SIZE:
                candidate = pending.popleft()
                if candidate.url not in self.seen:
                    batch.setdefault(candidate.url, candidate)
                else:
                    self.seeds_unplanned.discard(candidate.url)  # planned from a page's links meanwhile
            stored = await self._stored_pages(batch)
            not_due: list[Candidate] = []
            found: dict[str, list[Request]] = {}
            async for candidate in in_turns(batch.values()):
                self.seeds_unplanned.discard(candidate.url)
                if candidate.url in self.seen:  # scheduled while the stored state was read or built
                    continue
                page = stored.get(candidate.url)
                if page is not None and not self._is_due(page, candidate):
                    self.seen.add(candidate.url)
                    self.crawler.stats.inc_value("recrawl/not_due")
                    not_due.append(candidate)
                elif not self.budget_left(seed=candidate.via == "seed"):
                    # Kept, not dropped: a 304 of a request in flight may give budget back.
                    self.crawler.stats.inc_value("links/over_budget")
                    self.over_budget.setdefault(candidate.url, candidate)
                else:
                    request = self.page_request(
                        candidate.url,
                        depth=candidate.depth,
                        via=candidate.via,
                        referrer=candidate.referrer,
                        stored=page,
                        **candidate.meta,
                    )
                    if isinstance(request, Request) and candidate.via == "link" and candidate.referrer:
                        found.setdefault(candidate.referrer, []).append(request)
                    elif request is not None:
                        yield request
            for source, requests in found.items():
                async for output in self._admit(source, requests):
                    yield output
            if not_due and self.follows_links:
                pending.extend(await self._stored_link_candidates(not_due))

    async def _admit(self, source: str, requests: list[Request]) -> AsyncIterator[Request | PageItem]:
        """The links the page at ``source`` found that go to the frontier, and a ``skipped`` row
        for each of the others (outside the budget: nothing is downloaded)."""
        admitted, dropped = await self.admitted(source, requests)
        for request in admitted:
            yield request
        for request, why in dropped:
            self.pages_scheduled -= 1
            self.logger.debug("Not adding %s to the frontier: %s", request.url, why)
            yield self.recorder.skipped(request, why)

    def _is_due(self, page: StoredPage, candidate: Candidate) -> bool:
        lastmod = candidate.meta.get("sitemap_lastmod")
        return self.revisits.is_due(page.next_at, page.last_visit, lastmod.timestamp() if lastmod else None)

    async def _stored_pages(self, batch: dict[str, Candidate]) -> dict[str, StoredPage]:
        storage = self.services.open_storage
        if storage is None or not batch:
            return {}
        stored = StoredPages(storage.backend)

        async def read() -> dict[str, StoredPage]:
            if self.database_had_pages is None:
                self.database_had_pages = await stored.any()
            if not self.database_had_pages:
                # A first crawl: every row is this job's, of a URL it has seen. (Processes of a
                # shared crawl started later look up what the first ones stored.)
                return {}
            self.crawler.stats.inc_value("recrawl/lookups")
            return await stored.load(batch)

        return await self.stored_reads.read(read) or {}

    async def _stored_link_candidates(self, pages: list[Candidate]) -> list[Candidate]:
        storage = self.services.open_storage
        if storage is None:
            return []
        stored = (
            await self.stored_reads.read(lambda: StoredPages(storage.backend).links(page.url for page in pages)) or {}
        )
        candidates = []
        for page in pages:
            links = stored.get(page.url, [])
            self.crawler.stats.inc_value("recrawl/stored_links", len(links))
            candidates.extend(self.link_candidates(page.url, page.depth, links))
        return candidates

    def link_candidates(self, url: str, depth: int, links: Iterable[str]) -> list[Candidate]:
        """Candidates for the links of the page at ``url``: within the depth limit and the
        scope, not seen yet."""
        if self.max_depth and depth >= self.max_depth:
            return []
        stats = self.crawler.stats
        candidates = []
        for link in links:
            # Strings are checked before anything is built: most links were seen before.
            if link in self.seen:
                continue
            if link not in self.scope:
                stats.inc_value("links/offsite")
                continue
            candidates.append(Candidate(link, depth + 1, "link", url))
        return candidates

    async def parse_page(self, response: Response) -> AsyncIterator[PageItem | Request]:
        request = response.request
        history, stored_hash = history_of(request.meta.get("recrawl"))
        follow: Iterable[Candidate] = ()
        if response.status == 304:
            item = self.recorder.unchanged(response)
            self.pages_scheduled -= 1  # not downloaded: the budget counts downloads
            self.crawler.stats.inc_value("recrawl/unchanged/not_modified")
            if self.follows_links:
                follow = await self._stored_link_candidates([self._candidate(item)])
        else:
            item, page = await self.recorder.fetched(response)
            if stored_hash is not None and item.status == "fetched" and item.content_hash == stored_hash:
                item.status = "unchanged"
                self.crawler.stats.inc_value("recrawl/unchanged/same_text")
            follows = await self.judge_twins(item)
            if page is not None and self.follows_links:
                links = self.followed_links(item, page) if follows else []
                if self.recorder.store_links and links != page.links:
                    item.followed_links = json.dumps(links)
                follow = self.link_candidates(item.url, response.meta.get("depth", 0), links)
        if item.status in _REVISITED_STATUSES:
            self._schedule_revisit(item, history)
        # Links before the row: in a shared crawl the stored row ends the page's lease, so
        # what the page links to must be queued by then.
        async for link_request in self.plan(follow):
            yield link_request
        yield item

    def _candidate(self, item: PageItem) -> Candidate:
        return Candidate(item.url, item.depth, item.discovered_via or "link", item.referrer)

    def _schedule_revisit(self, item: PageItem, history: Any) -> None:
        changed = item.status != "unchanged"
        if history is not None and changed:
            self.crawler.stats.inc_value("recrawl/changed")
        revisit = self.revisits.after_visit(history, changed, item.sitemap_changefreq)
        item.next_crawl_at = datetime.fromtimestamp(revisit.next_at, UTC)
        item.recrawl_interval_seconds = revisit.interval
        item.visit_count, item.change_count = revisit.revisits, revisit.changes

    def followed_links(self, item: PageItem, page: PageData) -> list[str]:
        """The links of a page the crawl follows (spiders that follow links)."""
        return page.links

    async def page_failed(self, failure: Failure) -> AsyncIterator[PageItem | Request]:
        if failure.check(NotSent) and LEAVE_AT in failure.request.meta:
            # Handed out by the shared frontier, it went back there (``request_not_sent``):
            # another process of the crawl fetches it; no row.
            return
        item = self.recorder.failed(failure, failure.request)
        if _never_sent(failure, item):
            # Refused before it left (robots.txt, the address guard): the budget counts
            # downloads, so its share goes to the URLs waiting for one.
            self.pages_scheduled -= 1
            async for request in self.plan(()):
                yield request
        yield item

    def closed(self, reason: str) -> None:
        self._record_over_budget()
        self.recorder.close()

    def _record_over_budget(self) -> None:
        """``skipped`` rows for the URLs the ``max_pages`` budget kept from being requested, as
        a job ended by ``max_time`` has for the URLs it left queued."""
        why = unfetched_reason("max_pages", self.crawler.settings)
        for candidate in self.over_budget.values():
            request = Request(
                candidate.url,
                meta={"depth": candidate.depth, "discovered_via": candidate.via, "referrer": candidate.referrer},
            )
            record_outcome(self.crawler, request, "skipped", why)
        self.over_budget.clear()


def _never_sent(failure: Failure, item: PageItem) -> bool:
    """Whether a page's request was refused before anything was sent (not a redirect's hop,
    which followed a download)."""
    refused = item.status in ("blocked_by_robots", "blocked_by_policy") or isinstance(
        failure.value, RobotsUnreachable | TrapRefused
    )
    return refused and not failure.request.meta.get("redirect_urls")


async def in_turns(outputs: Iterable[T]) -> AsyncIterator[T]:
    """``outputs`` with the reactor given a turn every ``TURN_SIZE`` of them."""
    for count, output in enumerate(outputs, 1):
        yield output
        if count % TURN_SIZE == 0:
            await asyncio.sleep(0)

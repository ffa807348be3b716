"""What the components of one crawl share, built once per crawler: the domain limiter, the
robots.txt service, the scope, the address guard, the storage and, in a shared crawl, the
crawl's Redis connection and seen filter.

Every component finds them the same way, ``CrawlServices.of(crawler)``. Whether the crawl keeps
its state in the process or shares it through Redis (``REDIS_URL``) is decided here, once: this
is the only module that builds both the local and the Redis variants (the shared-crawl add-on
names the matching scheduler from the same setting). Each service is built when first asked for;
the Redis ones need the crawl's id, which the spider names (``name_crawl``). Three exist only once
the component they serve made them: the scope (the spider), the robots.txt service (the robots
middleware) and the address guard (its middleware); where that component is not enabled, the
others do without.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.crawler import Crawler

from crawler.guard.checker import AddressGuard
from crawler.guard.resolver import address_policy, installed_resolver
from crawler.identity.crawls import crawl_id
from crawler.ingestion.rate import TokenBuckets
from crawler.politeness.config import policy_config
from crawler.politeness.limiter_local import DomainLimiter
from crawler.politeness.overrides import ControlTable, parse_overrides
from crawler.politeness.policy import Policy
from crawler.politeness.slots import domain_key
from crawler.redis import redis_enabled
from crawler.robots.service import RobotsService
from crawler.scope.scope_local import Scope
from crawler.storage import open_backend
from crawler.storage.backend import StorageBackend
from crawler.storage.outbox import CrawlStorage
from crawler.traps.guard import TrapGuard
from crawler.traps.patterns_local import PatternCounts
from crawler.traps.url_shapes import UrlRules
from crawler.twins.earlier_runs import StoredFingerprints
from crawler.twins.index_local import TwinIndex
from crawler.twins.judge import TwinJudge
from crawler.twins.probe import SoftNotFoundProbes

# The Redis variants are imported where a shared crawl builds them: a crawl in one process never
# loads redis-py.
if TYPE_CHECKING:
    from crawler.ingestion.rate_redis import RedisTokenBuckets
    from crawler.redis.connection import CrawlRedis
    from crawler.seen.filter import MarkedSeenFilter
    from crawler.twins.index_redis import RedisTwinIndex

_ATTRIBUTE = "crawl_services"
"""Where the crawler object carries its services."""


class CrawlServices:
    def __init__(self, crawler: Crawler):
        self.crawler = crawler
        self.settings = crawler.settings
        self.shared = redis_enabled(crawler.settings)
        """Whether the crawl is shared through Redis."""
        self.scope: Scope | None = None
        """The crawl's scope, once the spider made one (``make_scope``); None: nothing limits
        where the crawl goes (a spider of another project's kind)."""
        self.robots: RobotsService | None = None
        """The robots.txt service, once the robots middleware made it (``make_robots``); None:
        robots.txt is not obeyed."""
        self.guard: AddressGuard | None = None
        """The address guard, once its middleware made it (``make_guard``); None: only the
        resolver refuses addresses."""
        self._crawl_id: str | None = None
        self._storage: CrawlStorage | None = None

    @classmethod
    def of(cls, crawler: Crawler) -> CrawlServices:
        """The crawler's services, made on first use."""
        services = getattr(crawler, _ATTRIBUTE, None)
        if services is None:
            services = cls(crawler)
            setattr(crawler, _ATTRIBUTE, services)
        return services

    def name_crawl(self, crawl_id: str) -> None:
        """The id of the crawl the spider belongs to (the key prefix of a shared crawl)."""
        self._crawl_id = crawl_id

    @property
    def crawl_id(self) -> str:
        """The id the spider named, else the one ``CRAWLER_CRAWL_ID`` gives (components built
        without a spider)."""
        explicit = self.settings.get("CRAWLER_CRAWL_ID")
        crawl = self._crawl_id or (crawl_id("", (), explicit) if explicit else None)
        if not crawl:
            raise RuntimeError("a shared crawl needs its id: the spider names it, or CRAWLER_CRAWL_ID")
        return crawl

    @cached_property
    def redis(self) -> CrawlRedis | None:
        """The crawl's Redis connection, in a shared crawl."""
        if not self.shared:
            return None
        from crawler.politeness.config import frontier_config
        from crawler.redis.connection import CrawlRedis

        return CrawlRedis(self.settings, self.crawl_id, frontier_config(self.settings))

    @cached_property
    def limiter(self) -> DomainLimiter:
        config = policy_config(self.settings)
        if self.redis is None:
            limiter = DomainLimiter(Policy(config))
        else:
            from crawler.politeness.limiter_redis import RedisDomainLimiter

            # The frontier script applies the lead: it alone knows when the last request of any
            # process left, which this process's copy of a domain's state does not.
            limiter = RedisDomainLimiter(Policy(replace(config, handout_lead=0.0)), self.redis.store, self.redis.link)
        limiter.controls = ControlTable(parse_overrides(self.settings.getdict("CRAWLER_DOMAIN_OVERRIDES")))
        return limiter

    def make_robots(self) -> RobotsService:
        """The robots.txt service, made by the robots middleware."""
        if self.robots is None:
            self.robots = RobotsService(self.crawler, self.limiter, self.storage)
            if self.redis is not None:
                from crawler.robots.cache_redis import RedisRobotsCache

                self.robots.shared_cache = RedisRobotsCache(
                    self.redis.store, self.redis.link, self.robots.rules, self.robots.cache
                )
        return self.robots

    def make_scope(self) -> Scope:
        """The crawl's scope (``CRAWLER_SCOPE``), made by the spider, which adds its seeds."""
        if self.scope is None:
            mode = self.settings.get("CRAWLER_SCOPE")
            if self.redis is None:
                self.scope = Scope(mode)
            else:
                from crawler.scope.scope_redis import RedisScope

                self.scope = RedisScope(mode, self.redis.link, self.redis.key("scope"))
        return self.scope

    def make_guard(self) -> AddressGuard:
        """The address guard, made by its middleware; it shares its policy with the guarded
        resolver where Scrapy installed one, so that seeds allowed here are allowed at
        connection time too."""
        if self.guard is None:
            resolver = installed_resolver()
            policy = resolver.policy if resolver is not None else address_policy(self.settings)
            self.guard = AddressGuard(policy, lambda: self.scope)
        return self.guard

    @cached_property
    def seen(self) -> MarkedSeenFilter | None:
        """The crawl's seen filter in Redis, as ``CRAWLER_SEEN_FILTER`` says, in a shared crawl
        (a crawl in one process uses Scrapy's own dupefilter)."""
        if self.redis is None:
            return None
        from crawler.seen.bloom import BloomSeenFilter
        from crawler.seen.bloom_shape import BloomShape
        from crawler.seen.exact import ExactSeenFilter
        from crawler.seen.filter import has_bloom_module

        settings, client, key = self.settings, self.redis.client, self.redis.key("seen")
        fingerprinter, debug = self.crawler.request_fingerprinter, settings.getbool("DUPEFILTER_DEBUG")
        store = self.redis.store

        def place(request: Request) -> str:
            return store.seen_key(domain_key(request))

        kind = settings.get("CRAWLER_SEEN_FILTER")
        if kind == "exact":
            return ExactSeenFilter(client, key, fingerprinter, debug, place)
        if kind == "bloom":
            # Each shard a filter of its share of the capacity.
            capacity = max(1, settings.getint("CRAWLER_BLOOM_CAPACITY") // len(store.shards))
            shape = BloomShape.for_capacity(capacity, settings.getfloat("CRAWLER_BLOOM_ERROR_RATE"))
            use_module = has_bloom_module(client)
            places = [f"{shard}:seen" for shard in store.shards]
            return BloomSeenFilter(
                client, key, fingerprinter, shape, use_module=use_module, debug=debug, place=place, places=places
            )
        raise ValueError(f"CRAWLER_SEEN_FILTER must be 'exact' or 'bloom', not {kind!r}")

    @cached_property
    def traps(self) -> TrapGuard:
        """The trap rules of discovered URLs, with each site's pattern counts in the process or
        in Redis."""
        settings = self.settings
        rules = UrlRules(
            settings.getint("CRAWLER_TRAP_MAX_SEGMENT_REPEATS"),
            settings.getint("CRAWLER_TRAP_MAX_PATH_SEGMENTS"),
            settings.getint("CRAWLER_TRAP_MAX_QUERY_PARAMS"),
        )
        limits = settings.getint("CRAWLER_TRAP_PATTERN_MAX_URLS"), settings.getint("CRAWLER_TRAP_PATTERN_TWINS")
        if self.redis is None:
            return TrapGuard(rules, PatternCounts(*limits))
        from crawler.traps.patterns_redis import RedisPatternCounts

        return TrapGuard(rules, RedisPatternCounts(*limits, self.redis.link, self.redis.key("traps")))

    @cached_property
    def twins(self) -> TwinJudge | None:
        """The judge of fetched pages' twins, with each site's fingerprints in the process or in
        Redis; None when ``CRAWLER_TWINS_ENABLED`` is off."""
        settings = self.settings
        if not settings.getbool("CRAWLER_TWINS_ENABLED"):
            return None
        distance, capacity = settings.getint("CRAWLER_TWIN_MAX_DISTANCE"), settings.getint("CRAWLER_TWIN_SITE_CAPACITY")
        index: TwinIndex | RedisTwinIndex
        if self.redis is None:
            index, probes = TwinIndex(distance, capacity), SoftNotFoundProbes(self.crawl_id)
        else:
            from crawler.twins.index_redis import RedisTwinIndex
            from crawler.twins.probe import RedisSoftNotFoundProbes

            index = RedisTwinIndex(self.redis.link, self.redis.key("twins"), distance, capacity)
            probes = RedisSoftNotFoundProbes(self.crawl_id, self.redis.link, self.redis.key("probed"))
        per_site = settings.getint("CRAWLER_TWIN_STORED_PER_SITE")
        stored = StoredFingerprints(self._open_backend, per_site) if per_site else None
        return TwinJudge(index, probes, self.traps, settings.getbool("CRAWLER_TWIN_FOLLOW_LINKS"), stored)

    def _open_backend(self) -> StorageBackend | None:
        storage = self.open_storage
        return None if storage is None else storage.backend

    @cached_property
    def ingest_rate(self) -> TokenBuckets | RedisTokenBuckets | None:
        """How many new URLs the pages of each site may add to the frontier, counted in the
        process or in Redis; None when ``CRAWLER_INGEST_RATE_PER_SITE`` is 0."""
        settings = self.settings
        rate, burst = (
            settings.getfloat("CRAWLER_INGEST_RATE_PER_SITE"),
            settings.getint("CRAWLER_INGEST_BURST_PER_SITE"),
        )
        if not rate:
            return None
        if self.redis is None:
            return TokenBuckets(rate, burst)
        from crawler.ingestion.rate_redis import RedisTokenBuckets

        return RedisTokenBuckets(self.redis.link, self.redis.key("ingest"), rate, burst)

    @property
    def storage(self) -> CrawlStorage:
        """The crawl's database (``DATABASE_URL``), which the storage pipeline opens."""
        if self._storage is None:
            self._storage = CrawlStorage(open_backend(self.settings.get("DATABASE_URL")))
        return self._storage

    @property
    def open_storage(self) -> CrawlStorage | None:
        """The storage once the pipeline opened it; None without a storage pipeline, or when the
        database could not be opened."""
        return self._storage if self._storage is not None and self._storage.opened else None

"""The policy's configuration from the crawl's settings, and what the crawl's store in Redis takes
of it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.settings import BaseSettings
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

from crawler.politeness.policy import DomainState, Policy, PolicyConfig
from crawler.redis import redis_enabled
from crawler.storage import is_postgres

if TYPE_CHECKING:
    from crawler.redis.store import FrontierConfig

ROBOTS_MIDDLEWARE = "crawler.middlewares.robots.RobotsMiddleware"
SCRAPY_ROBOTS_MIDDLEWARE = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"


def robots_obeyed(settings: BaseSettings, middlewares: tuple[str, ...] = (ROBOTS_MIDDLEWARE,)) -> bool:
    """``ROBOTSTXT_OBEY``, where one of ``middlewares`` (or a subclass) is enabled to fetch the
    rules: with none, nothing does, and a frontier that held each domain for its robots.txt
    (only this project's middleware tells it the rules came) would hold it for ever."""
    if not settings.getbool("ROBOTSTXT_OBEY"):
        return False
    enabled = build_component_list(settings.getwithbase("DOWNLOADER_MIDDLEWARES"))
    if any(path in enabled for path in middlewares):
        return True
    for component in enabled:  # a subclass under another name
        loaded = load_object(component) if isinstance(component, str) else component
        if any(f"{cls.__module__}.{cls.__qualname__}" in middlewares for cls in getattr(loaded, "__mro__", ())):
            return True
    return False


def policy_config(settings: BaseSettings) -> PolicyConfig:
    if not settings.getbool("CRAWLER_LIMITER_ENABLED"):
        # No pacing at all: no delay, no per-domain limit beyond Scrapy's own.
        return PolicyConfig(default_delay=0, base_concurrency=1_000_000, latency_factor=0, circuit_failures=1_000_000)
    return PolicyConfig(
        default_delay=settings.getfloat("CRAWLER_DEFAULT_DELAY"),
        min_delay=settings.getfloat("CRAWLER_MIN_DELAY"),
        robots_delay_cap=settings.getfloat("CRAWLER_ROBOTS_DELAY_CAP"),
        max_delay=settings.getfloat("CRAWLER_MAX_DELAY"),
        base_concurrency=settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN"),
        concurrency_step=settings.getfloat("CRAWLER_CONCURRENCY_STEP"),
        probe_after=settings.getint("CRAWLER_PROBE_AFTER"),
        block_cap=settings.getfloat("CRAWLER_BLOCK_CAP"),
        circuit_failures=settings.getint("CRAWLER_CIRCUIT_FAILURES"),
        circuit_open_seconds=settings.getfloat("CRAWLER_CIRCUIT_OPEN_SECONDS"),
        circuit_close_successes=settings.getint("CRAWLER_CIRCUIT_CLOSE_SUCCESSES"),
        latency_factor=settings.getfloat("CRAWLER_LATENCY_FACTOR"),
        # A request not sent within the download timeout has failed, and its slot is returned.
        send_timeout=settings.getfloat("DOWNLOAD_TIMEOUT"),
        handout_lead=settings.getfloat("CRAWLER_HANDOUT_LEAD_SECONDS"),
    )


def frontier_config(settings: BaseSettings) -> FrontierConfig:
    """What the crawl's store in Redis needs of the settings: the pacing of a domain it has no
    state for yet, the robots.txt gate, leases."""
    from crawler.redis.store import FrontierConfig  # a shared crawl's only: redis-py

    policy = Policy(policy_config(settings))
    return FrontierConfig(
        default_delay=policy.effective_delay(DomainState()),
        default_concurrency=policy.concurrency(DomainState()),
        robots=robots_obeyed(settings),
        lease_seconds=settings.getfloat("CRAWLER_LEASE_SECONDS"),
        max_deliveries=settings.getint("CRAWLER_MAX_DELIVERIES"),
        spill_above=spill_threshold(settings),
        spill_keep=settings.getint("CRAWLER_SPILL_KEEP"),
        spill_cold_seconds=settings.getfloat("CRAWLER_SPILL_COLD_SECONDS"),
        # A process that found nothing asks again within its poll time: a freed slot waits that long for it.
        turn_seconds=settings.getfloat("CRAWLER_REDIS_POLL_SECONDS"),
    )


def spill_threshold(settings: BaseSettings) -> int:
    """``CRAWLER_SPILL_ABOVE`` where it applies (a shared crawl on PostgreSQL), else 0."""
    if not redis_enabled(settings) or not is_postgres(str(settings.get("DATABASE_URL") or "")):
        return 0
    above, keep = settings.getint("CRAWLER_SPILL_ABOVE"), settings.getint("CRAWLER_SPILL_KEEP")
    if above > 0 and not 0 < keep < above:
        raise ValueError(f"CRAWLER_SPILL_KEEP must be between 1 and CRAWLER_SPILL_ABOVE - 1, not {keep}")
    return max(0, above)

"""The crawl's services: one object per crawler, the local or the Redis variant of each service
as ``REDIS_URL`` says, and the scheduler the shared-crawl add-on names."""

from __future__ import annotations

from scrapy import Spider
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from crawler.addons.shared_crawl import LOCAL_SCHEDULER, SHARED_SCHEDULER, SharedCrawl
from crawler.politeness.limiter_local import DomainLimiter
from crawler.politeness.limiter_redis import RedisDomainLimiter
from crawler.robots.cache_redis import RedisRobotsCache
from crawler.scope.scope_local import Scope
from crawler.scope.scope_redis import RedisScope
from crawler.seen.exact import ExactSeenFilter
from crawler.services import CrawlServices
from tests.conftest import REDIS_URL
from tests.helpers import project_settings

SHARED = {"REDIS_URL": REDIS_URL, "CRAWLER_CRAWL_ID": "services-test"}
"""Settings of a shared crawl; nothing here sends a command to that Redis."""


def _services(**settings: object) -> CrawlServices:
    return CrawlServices.of(get_crawler(Spider, project_settings(**settings)))


def test_one_object_per_crawler() -> None:
    crawler = get_crawler(Spider, project_settings())
    services = CrawlServices.of(crawler)
    assert CrawlServices.of(crawler) is services
    assert services.limiter is services.limiter and services.storage is services.storage
    assert CrawlServices.of(get_crawler(Spider, project_settings())) is not services


def test_a_crawl_in_one_process_keeps_everything_in_the_process() -> None:
    services = _services()
    assert not services.shared and services.redis is None and services.seen is None
    assert type(services.limiter) is DomainLimiter
    assert services.make_robots().shared_cache is None
    assert type(services.make_scope()) is Scope


def test_a_shared_crawl_keeps_its_state_in_redis() -> None:
    services = _services(**SHARED)  # its id from CRAWLER_CRAWL_ID (a spider would name it)
    assert services.shared and services.redis is not None
    assert services.redis.prefix == "crawler:{services-test}"
    assert isinstance(services.limiter, RedisDomainLimiter) and services.limiter.store is services.redis.store
    assert isinstance(services.make_robots().shared_cache, RedisRobotsCache)
    assert isinstance(services.make_scope(), RedisScope)
    assert isinstance(services.seen, ExactSeenFilter)


def test_services_their_component_makes_exist_once_it_made_them() -> None:
    # The robots middleware, the address guard's, the spider: where one is not enabled, the
    # others do without its service (no robots.txt, no address checks but the resolver's, no scope).
    services = _services()
    assert services.robots is None and services.guard is None and services.scope is None
    robots, guard, scope = services.make_robots(), services.make_guard(), services.make_scope()
    assert (services.robots, services.guard, services.scope) == (robots, guard, scope)
    assert services.make_robots() is robots and services.make_guard() is guard and services.make_scope() is scope


def test_domain_overrides_reach_the_limiter() -> None:
    services = _services(CRAWLER_DOMAIN_OVERRIDES={"slow.example": {"min_delay": 5}})
    assert services.limiter.effective_delay("slow.example") == 5.0


def test_the_storage_is_open_only_once_the_pipeline_opened_it() -> None:
    services = _services()
    assert services.open_storage is None
    services.storage.opened = True
    assert services.open_storage is services.storage


def test_the_shared_crawl_add_on_names_the_redis_scheduler() -> None:
    settings = Settings(project_settings(**SHARED))
    SharedCrawl().update_settings(settings)
    assert settings["SCHEDULER"] == SHARED_SCHEDULER
    local = Settings(project_settings())
    SharedCrawl().update_settings(local)
    assert local["SCHEDULER"] == LOCAL_SCHEDULER
    own = Settings(project_settings(**SHARED))
    own.set("SCHEDULER", "my.Scheduler", priority="cmdline")
    SharedCrawl().update_settings(own)
    assert own["SCHEDULER"] == "my.Scheduler"

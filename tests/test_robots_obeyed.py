"""Whether a crawl obeys robots.txt: ``ROBOTSTXT_OBEY`` and a robots middleware to fetch the rules."""

from __future__ import annotations

from scrapy.settings import Settings

from crawler import settings as project
from crawler.middlewares.robots import RobotsMiddleware
from crawler.politeness.config import ROBOTS_MIDDLEWARE, SCRAPY_ROBOTS_MIDDLEWARE, robots_obeyed


class OwnRobotsMiddleware(RobotsMiddleware):
    pass


def _settings(**middlewares: int | None) -> Settings:
    settings = Settings()
    settings.setmodule(project)
    settings.set("DOWNLOADER_MIDDLEWARES", {**project.DOWNLOADER_MIDDLEWARES, **middlewares})
    return settings


def test_the_project_obeys_robots_txt() -> None:
    assert robots_obeyed(_settings())


def test_robots_txt_is_not_obeyed_when_the_setting_says_so() -> None:
    settings = _settings()
    settings.set("ROBOTSTXT_OBEY", False)
    assert not robots_obeyed(settings)


def test_robots_txt_is_not_obeyed_without_a_middleware_to_fetch_it() -> None:
    assert not robots_obeyed(_settings(**{ROBOTS_MIDDLEWARE: None}))


def test_scrapy_s_own_middleware_obeys_robots_txt_where_it_is_asked_for() -> None:
    with_scrapy_s = _settings(**{ROBOTS_MIDDLEWARE: None, SCRAPY_ROBOTS_MIDDLEWARE: 100})
    assert not robots_obeyed(with_scrapy_s)  # the frontier is told nothing by it
    assert robots_obeyed(with_scrapy_s, (ROBOTS_MIDDLEWARE, SCRAPY_ROBOTS_MIDDLEWARE))


def test_a_subclass_of_the_robots_middleware_obeys_it() -> None:
    own = f"{__name__}.{OwnRobotsMiddleware.__qualname__}"
    assert robots_obeyed(_settings(**{ROBOTS_MIDDLEWARE: None, own: 100}))

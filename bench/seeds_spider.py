"""A spider that fetches its seeds and follows nothing, for benchmarks that compare crawls of
exactly the same pages (``bench.many_domains``): the links spider's work on every page,
extraction included, without link following, whose pages would depend on timing (links found
early fill the page budget before later seeds are scheduled)."""

from __future__ import annotations

from crawler import settings
from crawler.spiders.links import LinksSpider

SPIDER_MODULES = ",".join([*settings.SPIDER_MODULES, __name__])
"""The ``SPIDER_MODULES`` setting that adds this spider to the project's."""


class SeedsSpider(LinksSpider):
    name = "seeds"
    follows_links = False

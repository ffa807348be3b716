"""``scrapy seed SPIDER URL [URL …]``: push seeds into a running shared crawl.

The crawl is the one the same seeds would start (``scrapy crawl SPIDER -a url=…``), or the
one named with ``--crawl``. Seeds go through the crawl's seen filter (a URL already seen is
not queued again) and widen its scope, as seeds given to a worker do.
"""

from __future__ import annotations

import argparse

from scrapy.commands import ScrapyCommand
from scrapy.crawler import Crawler
from scrapy.exceptions import UsageError
from scrapy.spiderloader import get_spider_loader
from scrapy.utils.misc import build_from_crawler, load_object

from crawler.frontier.codec import RequestCodec, UnserializableRequest
from crawler.redis import redis_enabled
from crawler.services import CrawlServices


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "SPIDER URL [URL ...] [--crawl NAME] [--seeds-file PATH]"

    def short_desc(self) -> str:
        return "Push seed URLs into a shared crawl's frontier (REDIS_URL)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--crawl", help="the crawl's id (default: from the spider and the seeds)")
        parser.add_argument("--seeds-file", help="a file of seeds, one per line")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args:
            raise UsageError("name a spider and at least one seed URL")
        settings = self.settings
        if not redis_enabled(settings):
            raise UsageError("REDIS_URL is not set: seeds can only be pushed into a shared crawl")
        from crawler.frontier.queue_redis import QueueEntry

        name, urls = args[0], args[1:]
        spidercls = get_spider_loader(settings).load(name)
        if not hasattr(spidercls, "page_request") or name == "sitemap":
            raise UsageError(
                f"spider {name!r} discovers from its seeds in the process that starts with them: start a worker with -a url=…"
            )
        crawler = Crawler(spidercls, settings)
        crawler.request_fingerprinter = build_from_crawler(
            load_object(settings["REQUEST_FINGERPRINTER_CLASS"]), crawler
        )
        spider = spidercls.from_crawler(
            crawler, url=",".join(urls) or None, seeds_file=opts.seeds_file, crawl=opts.crawl
        )
        services = CrawlServices.of(crawler)
        assert services.redis is not None and services.seen is not None
        seen = services.seen
        codec = RequestCodec(
            spider, settings.getlist("CRAWLER_REDIS_META_KEYS"), settings.getlist("CRAWLER_REDIS_LOCAL_META_KEYS")
        )
        queued = known = 0
        for url in spider.seed_urls():
            request = spider.page_request(url, depth=0, via="seed")
            if request is None:
                continue
            try:
                entry = QueueEntry.of(request, codec, seen.marker(request))
            except UnserializableRequest as exc:
                raise UsageError(str(exc)) from exc
            if entry.push_to(services.redis.store):
                queued += 1
            else:
                known += 1
        print(f"crawl {spider.crawl_id}: {queued} seeds queued, {known} already seen")

"""Obey robots.txt, replacing Scrapy's ``RobotsTxtMiddleware`` at its place: every request is
checked against its domain's rules (``crawler.robots.service``), and a spider's own request for
a robots.txt already fetched is answered from the cache. ``dont_obey_robotstxt`` opts out."""

from __future__ import annotations

from typing import Self

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response

from crawler.robots.service import RobotsService
from crawler.services import CrawlServices


class RobotsMiddleware:
    def __init__(self, service: RobotsService):
        self.service = service

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured
        return cls(CrawlServices.of(crawler).make_robots())

    async def process_request(self, request: Request) -> Response | None:
        response = self.service.cached_response(request)
        if response is not None:
            return response
        if not request.meta.get("dont_obey_robotstxt"):
            await self.service.check(request)
        return None

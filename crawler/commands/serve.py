"""``scrapy serve [--bind HOST:PORT]``: the API, the dashboard and the crawl-wide metrics, in a
process of its own beside the crawl processes (it reads what they publish in the database and
Redis, and writes the controls they poll)."""

from __future__ import annotations

import argparse

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from crawler.api.serve_config import ServeConfig


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[--bind HOST:PORT]"

    def short_desc(self) -> str:
        return "Serve the crawl's API, dashboard and Prometheus metrics"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--bind", help="HOST:PORT to listen on (default: CRAWLER_API_BIND)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        try:
            config = ServeConfig.from_settings(self.settings, opts.bind)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        # Imported here: Scrapy imports every command of the project, and a crawl needs no web server.
        from aiohttp import web

        from crawler.api.app import build_app

        app = build_app(config, self.settings)
        web.run_app(
            app,
            host=config.host,
            port=config.port,
            access_log=None,
            print=lambda _: print(
                f"scrapy serve: http://{config.host}:{config.port}/ ({config.database_url.partition('://')[0]}"
                f"{', Redis' if config.redis_url else ''})",
                flush=True,
            ),
        )

"""``scrapy serve [--bind HOST:PORT] [--certfile FILE --keyfile FILE]``: the API, the dashboard
and the crawl-wide metrics, in a process of its own beside the crawl processes (it reads what
they publish in the database and Redis, and writes the controls they poll)."""

from __future__ import annotations

import argparse
import logging
import ssl
import sys
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

if TYPE_CHECKING:
    from crawler.api.serve_config import ServeConfig


logger = logging.getLogger(__name__)


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[--bind HOST:PORT] [--certfile FILE --keyfile FILE]"

    def short_desc(self) -> str:
        return "Serve the crawl's API, dashboard and Prometheus metrics"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--bind", help="HOST:PORT to listen on (default: CRAWLER_API_BIND)")
        parser.add_argument("--certfile", help="serve HTTPS with this PEM certificate (chain)")
        parser.add_argument("--keyfile", help="the certificate's PEM private key")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        # Imported here: Scrapy imports every command of the project, and a crawl needs neither
        # the API's settings nor (below) its web server.
        from crawler.api.serve_config import ServeConfig, is_loopback

        try:
            config = ServeConfig.from_settings(self.settings, opts.bind, opts.certfile, opts.keyfile)
            tls = _tls(config)
        except (ValueError, OSError) as exc:
            raise UsageError(str(exc)) from exc
        if not is_loopback(config.host):
            logger.warning(
                "scrapy serve listens on %s, beyond this machine: %s",
                config.host,
                "anyone who can reach it may try passwords"
                + ("" if tls else ", and logins and sessions cross the network in clear (--certfile, --keyfile)"),
            )
        from aiohttp import web

        from crawler.api.app import build_app

        app = build_app(config, self.settings)
        try:
            web.run_app(
                app,
                host=config.host,
                port=config.port,
                ssl_context=tls,
                access_log=None,
                print=lambda _: print(
                    f"scrapy serve: {config.scheme}://{config.host}:{config.port}/ "
                    f"({config.database_url.partition('://')[0]}{', Redis' if config.redis_url else ''})",
                    flush=True,
                ),
            )
        except OSError as exc:
            # The address is taken or not this machine's: one line, not a traceback.
            print(f"scrapy serve: cannot listen on {config.host}:{config.port}: {exc.strerror or exc}", file=sys.stderr)
            self.exitcode = 1


def _tls(config: ServeConfig) -> ssl.SSLContext | None:
    if not config.certfile:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(config.certfile, config.keyfile)
    return context

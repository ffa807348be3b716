"""``scrapy userdel [--sessions-only] NAME``: delete a user of ``scrapy serve``, or only end its
sessions (a stolen cookie, a laptop lost). Either way every session of the user ends at once, in
the database and in Redis alike: a session lives only while its user's session stamp is the one
it was made with."""

from __future__ import annotations

import argparse
import asyncio
import sys

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from crawler.storage import open_backend
from crawler.storage.accounts import delete_user


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[--sessions-only] NAME"

    def short_desc(self) -> str:
        return "Delete a user of scrapy serve, or end its sessions"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--sessions-only", action="store_true", help="end the user's sessions, keep the user")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("name one user")
        (name,) = args
        found = asyncio.run(_apply(self.settings.get("DATABASE_URL"), name, opts.sessions_only))
        if not found:
            print(f"no user {name}", file=sys.stderr)
            self.exitcode = 1
            return
        print(f"user {name}: sessions ended" if opts.sessions_only else f"user {name} deleted, sessions ended")


async def _apply(database_url: str, name: str, sessions_only: bool) -> bool:
    from crawler.api.auth import end_user_sessions

    db = open_backend(database_url)
    await db.open()
    try:
        return await (end_user_sessions(db, name) if sessions_only else delete_user(db, name))
    finally:
        await db.close()

"""``scrapy useradd NAME ROLE``: create a user of ``scrapy serve`` (or change its role and
password). The password is read on standard input, never from the command line, where other
users of the machine could see it. A new role holds from the user's next request; a new password
ends the user's sessions (``scrapy userdel --sessions-only`` ends them without one)."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from crawler.storage import open_backend

MIN_PASSWORD = 8


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        from crawler.api.auth import ROLES

        return f"NAME {{{'|'.join(ROLES)}}}  (password on standard input)"

    def short_desc(self) -> str:
        return "Create a user of scrapy serve, or change its role and password"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 2:
            raise UsageError("name a user and a role")
        name, role = args
        from crawler.api.auth import ROLES

        if role not in ROLES:
            raise UsageError(f"the role must be one of {', '.join(ROLES)}")
        if not 0 < len(name) <= 64 or not name.isprintable():
            raise UsageError("a user name has 1 to 64 printable characters")
        password = _read_password()
        if len(password) < MIN_PASSWORD:
            raise UsageError(f"a password has at least {MIN_PASSWORD} characters")
        asyncio.run(_save(self.settings.get("DATABASE_URL"), name, role, password))
        print(f"user {name} ({role}) saved")


def _read_password() -> str:
    if sys.stdin.isatty():
        first = getpass.getpass("Password: ")
        if getpass.getpass("Again: ") != first:
            raise UsageError("the two passwords differ")
        return first
    return sys.stdin.readline().rstrip("\r\n")


async def _save(database_url: str, name: str, role: str, password: str) -> None:
    from crawler.api.auth import save_user

    db = open_backend(database_url)
    await db.open()
    try:
        await save_user(db, name, role, password)
    finally:
        await db.close()

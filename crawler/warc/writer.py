"""``WarcFiles`` on a thread of its own: records are made, compressed and written off the
reactor, which only waits for where each went. One thread, so records go out in order."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from functools import partial
from typing import TypeVar

from crawler.warc import Archived
from crawler.warc.exchange import Exchange
from crawler.warc.files import WarcFiles

T = TypeVar("T")


class WarcWriter:
    def __init__(self, files: WarcFiles):
        self.files = files
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="warc")

    async def fetch(self, exchange: Exchange) -> Archived:
        return await self._run(partial(self.files.fetch, exchange))

    async def outlinks(self, url: str, concurrent_to: str, links_json: str, date: datetime) -> None:
        await self._run(partial(self.files.outlinks, url, concurrent_to, links_json, date))

    async def close(self) -> None:
        """Close the file being written (it is indexed then) and end the thread."""
        try:
            await self._run(self.files.close)
        finally:
            self._executor.shutdown(wait=False)

    async def _run(self, call: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

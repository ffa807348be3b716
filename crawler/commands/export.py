"""``scrapy export``: print or write the rows of ``pages`` as JSON Lines or CSV.

Filters by status, domain and job; the columns are chosen from the table's (the body is left
out unless asked for). Reads the database of ``DATABASE_URL``, as the crawl writes it. A domain
is named as stored (``host:port``) or by its host alone, for every port of it; a name that means
no domain of ``pages`` gets a one-line hint on standard error, the known domains that start with
its host, and exit status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from crawler.control.domain_names import look_up
from crawler.storage import StorageRefused, StorageUnavailable, open_backend
from crawler.storage.pages import page_rows
from crawler.storage.rows import json_safe
from crawler.storage.schema import PAGE_COLUMNS

DEFAULT_COLUMNS = (
    "url",
    "status",
    "http_status",
    "error",
    "title",
    "content_type",
    "content_length",
    "crawled_at",
    "depth",
    "job_id",
)
_FILTERS = {"status": "status", "domain": "domain", "job": "job_id"}


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[--format jsonl|csv] [--status S] [--domain D] [--job ID] [--columns a,b] [-o FILE]"

    def short_desc(self) -> str:
        return "Print or write the crawled rows (pages) as JSON Lines or CSV"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
        parser.add_argument("--status", help="only rows with this status (fetched, error, …)")
        parser.add_argument("--domain", help="only rows of this domain: host:port, or a host for every port of it")
        parser.add_argument("--job", help="only rows written by this job id")
        parser.add_argument("--columns", help=f"comma-separated columns (default: {','.join(DEFAULT_COLUMNS)})")
        parser.add_argument("-o", "--output", help="write to this file instead of standard output")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        columns = opts.columns.split(",") if opts.columns else list(DEFAULT_COLUMNS)
        unknown = [c for c in columns if c not in PAGE_COLUMNS]
        if unknown:
            raise UsageError(
                f"unknown columns {', '.join(unknown)} (columns: {', '.join(PAGE_COLUMNS)})", print_help=False
            )
        filters = {column: [getattr(opts, option)] for option, column in _FILTERS.items() if getattr(opts, option)}
        try:
            count = asyncio.run(self._export(opts, columns, filters))
        except (StorageRefused, StorageUnavailable) as exc:
            print(f"scrapy export: error: {exc}", file=sys.stderr)
            self.exitcode = 1
            return
        if count is None:
            self.exitcode = 1
        elif opts.output:
            print(f"{count} rows written to {opts.output}", file=sys.stderr)

    async def _export(self, opts: argparse.Namespace, columns: list[str], filters: dict[str, list[str]]) -> int | None:
        """The rows written; None when the domain named none."""
        backend = open_backend(self.settings["DATABASE_URL"])
        await backend.open()
        try:
            if opts.domain:
                named = await look_up(backend, "pages", opts.domain)
                if not named.domains:
                    print(f"scrapy export: no pages of {named.name}; {named.hint()}", file=sys.stderr)
                    return None
                filters["domain"] = named.domains
            with _output(opts.output) as output:
                write = _writer(opts.format, output, columns)
                count = 0
                async for row in page_rows(backend, columns, filters):
                    write(row)
                    count += 1
                return count
        finally:
            await backend.close()


@contextmanager
def _output(path: str | None) -> Iterator[TextIO]:
    if path is None:
        yield sys.stdout
        return
    with open(path, "w", encoding="utf-8", newline="") as output:
        yield output


def _writer(kind: str, output: TextIO, columns: list[str]) -> Any:
    if kind == "csv":
        writer = csv.writer(output)
        writer.writerow(columns)
        return lambda row: writer.writerow(json_safe(row))
    return lambda row: output.write(json.dumps(dict(zip(columns, json_safe(row))), ensure_ascii=False) + "\n")

"""``scrapy export``: print or write the rows of ``pages`` as JSON Lines or CSV.

Filters by status, domain and job; the columns are chosen from the table's (the body is left
out unless asked for). Reads the database of ``DATABASE_URL``, as the crawl writes it.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import sys
from typing import Any, TextIO

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from crawler.storage import StorageBackend, StorageRefused, StorageUnavailable, open_backend
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
        parser.add_argument("--domain", help="only rows of this domain (host[:port])")
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
        filters = {column: getattr(opts, option) for option, column in _FILTERS.items() if getattr(opts, option)}
        backend = open_backend(self.settings["DATABASE_URL"])
        output: TextIO = open(opts.output, "w", encoding="utf-8", newline="") if opts.output else sys.stdout
        try:
            count = asyncio.run(_export(backend, columns, filters, _writer(opts.format, output, columns)))
        except (StorageRefused, StorageUnavailable) as exc:
            print(f"scrapy export: error: {exc}", file=sys.stderr)
            self.exitcode = 1
            return
        finally:
            if opts.output:
                output.close()
        if opts.output:
            print(f"{count} rows written to {opts.output}", file=sys.stderr)


def _writer(kind: str, output: TextIO, columns: list[str]) -> Any:
    if kind == "csv":
        writer = csv.writer(output)
        writer.writerow(columns)
        return lambda row: writer.writerow(json_safe(row))
    return lambda row: output.write(json.dumps(dict(zip(columns, json_safe(row))), ensure_ascii=False) + "\n")


async def _export(backend: StorageBackend, columns: list[str], filters: dict[str, str], write: Any) -> int:
    await backend.open()
    try:
        count = 0
        async for row in page_rows(backend, columns, filters):
            write(row)
            count += 1
        return count
    finally:
        await backend.close()

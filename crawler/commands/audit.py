"""``scrapy audit NAME [--since WHEN] [--job JOB] [--tolerance S] [--json] [--html FILE]``: what
the crawler did to a site, from its request log and robots.txt decisions
(``crawler.control.site_audit``), as text, JSON, or an HTML page for the site's owner.

NAME is a domain as stored (``host:port``), or a host without its port, which means the host on
every port it was crawled at: each port is a domain of its own, paced on its own, so each gets a
report of its own (with ``--json``, an object of summaries by domain when there are several). A
name that means no domain of the request log gets a one-line hint on standard error, the known
domains that start with its host, and exit status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from crawler.storage import open_backend
from crawler.storage.observations import logged_requests, robots_decisions

if TYPE_CHECKING:
    from crawler.control.audit_html import DomainAudit
    from crawler.control.domain_names import NamedDomains

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(value: str, now: datetime) -> datetime:
    """A duration back from ``now`` (``90s``, ``30m``, ``2h``, ``7d``) or an ISO 8601 time (UTC
    unless it says)."""
    match = _DURATION.match(value.strip())
    if match:
        return now - timedelta(seconds=float(match[1]) * _UNITS[match[2]])
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(f"--since takes a duration (30m, 2h, 7d) or an ISO 8601 time, not {value!r}") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def scope(since: datetime | None, job: str | None) -> str:
    """The window audited, in words."""
    words = f"Requests started since {since.isoformat()}" if since is not None else "Every request logged"
    return f"{words}, of job {job}." if job else f"{words}."


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "NAME [--since WHEN] [--job JOB] [--tolerance S] [--json] [--html FILE]"

    def short_desc(self) -> str:
        return "What the crawler did to a site: requests, spacing, concurrency, 429s, robots.txt"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--since", help="a duration back from now (30m, 2h, 7d) or an ISO 8601 time")
        parser.add_argument("--job", help="one job's requests only")
        parser.add_argument(
            "--tolerance", type=float, default=0.010, help="seconds a gap may fall short of the delay (default 0.010)"
        )
        parser.add_argument("--json", action="store_true", help="print the summary as JSON")
        parser.add_argument("--html", metavar="FILE", help="also write the report as a self-contained HTML page")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("name one domain: host:port as stored, or a host for every port of it")
        if opts.tolerance < 0:
            raise UsageError(f"--tolerance takes seconds, at least 0, not {opts.tolerance}")
        since = parse_since(opts.since, datetime.now(UTC)) if opts.since else None
        named, audits = asyncio.run(self._audits(args[0], since, opts.job, opts.tolerance))
        if not audits:
            print(f"scrapy audit: no requests logged for {named.name}; {named.hint()}", file=sys.stderr)
            self.exitcode = 1
            return
        from crawler.control.audit_html import audit_page
        from crawler.control.audit_report import text_report

        if opts.html:
            Path(opts.html).write_text(audit_page(named.name, scope(since, opts.job), audits), encoding="utf-8")
            print(f"HTML report written to {opts.html}", file=sys.stderr)
        if opts.json:
            summaries = {audit.domain: audit.summary for audit in audits}
            print(json.dumps(audits[0].summary if len(audits) == 1 else summaries, indent=2))
        else:
            print("\n\n".join(text_report(audit.domain, audit.summary) for audit in audits))

    async def _audits(
        self, name: str, since: datetime | None, job: str | None, tolerance: float
    ) -> tuple[NamedDomains, list[DomainAudit]]:
        from crawler.control.audit_html import DomainAudit
        from crawler.control.domain_names import look_up
        from crawler.control.site_audit import in_start_order, summarize

        backend = open_backend(self.settings.get("DATABASE_URL"))
        await backend.open()
        try:
            named = await look_up(backend, "request_log", name)
            audits = []
            for domain in named.domains:
                rows = await logged_requests(backend, domain, since, job)
                decisions = await robots_decisions(backend, domain, since, job)
                audits.append(DomainAudit(domain, summarize(rows, tolerance, decisions), in_start_order(rows)))
        finally:
            await backend.close()
        return named, audits

"""``scrapy audit DOMAIN [--since WHEN] [--job JOB] [--json]``: what the crawler did to a site,
from its request log and robots.txt decisions (``crawler.control.site_audit.summarize``)."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from crawler.control.site_audit import summarize
from crawler.storage import open_backend
from crawler.storage.observations import logged_requests, robots_decisions

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


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "DOMAIN [--since WHEN] [--job JOB] [--json]"

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

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("name one domain (as stored: host, or host:port)")
        since = parse_since(opts.since, datetime.now(UTC)) if opts.since else None
        summary = asyncio.run(self._summary(args[0].strip().lower(), since, opts.job, opts.tolerance))
        print(json.dumps(summary, indent=2) if opts.json else report(args[0], summary))

    async def _summary(self, domain: str, since: datetime | None, job: str | None, tolerance: float) -> dict[str, Any]:
        backend = open_backend(self.settings.get("DATABASE_URL"))
        await backend.open()
        try:
            rows = await logged_requests(backend, domain, since, job)
            decisions = await robots_decisions(backend, domain, since, job)
        finally:
            await backend.close()
        return summarize(rows, tolerance, decisions)


def report(domain: str, summary: dict[str, Any]) -> str:
    """The summary for people."""
    lines = [f"{domain}: {summary['requests']} requests"]
    if summary["requests"]:
        lines[0] += f" from {summary['first_start']} to {summary['last_start']}"
        lines.append("  outcomes: " + ", ".join(f"{k} x{v}" for k, v in summary["outcomes"].items()))
    gap = summary["smallest_gap"]
    if gap is not None:
        delay = "unknown" if gap["delay_in_force"] is None else f"{gap['delay_in_force']:.3f} s"
        lines.append(
            f"  smallest gap between two starts: {gap['seconds']:.3f} s (delay in force {delay}) at {gap['at']}"
        )
    lines.append(
        f"  gaps shorter than the delay (tolerance {summary['delay_tolerance']:.3f} s): {summary['gaps_under_delay']}"
    )
    for gap in summary["gaps_under_delay_listed"]:
        lines.append(
            f"    {gap['at']}: {gap['seconds']:.3f} s < {gap['delay_in_force']:.3f} s, {gap['after']} -> {gap['before']}"
        )
    if summary["max_in_flight_at"] is not None:
        lines.append(f"  most in flight at once: {summary['max_in_flight']} (from {summary['max_in_flight_at']})")
    lines.append(f"  429 answers: {summary['responses_429']}")
    for refusal in summary["responses_429_listed"]:
        waited = "no request after it" if refusal["waited"] is None else f"next request {refusal['waited']:.3f} s later"
        lines.append(f"    {refusal['at']}: {refusal['url']}, {waited}")
    lines.append("  robots.txt decisions:" + ("" if summary["robots"] else " none"))
    for group in summary["robots"]:
        verdict = "allowed" if group["allowed"] else "disallowed"
        lines.append(f"    {verdict} x{group['decisions']} by {group['rule'] or 'no rule'} (e.g. {group['example']})")
    return "\n".join(lines)

"""The audit of a site for people: the summary of ``crawler.control.site_audit`` as a headline
and findings (a label, a value, details), which ``scrapy audit`` prints as text and the HTML
report (``crawler.control.audit_html``) shows as a list."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Finding:
    label: str
    value: str
    details: tuple[str, ...] = ()


def headline(domain: str, summary: dict[str, Any]) -> str:
    line = f"{domain}: {summary['requests']} requests"
    if summary["requests"]:
        line += f" from {summary['first_start']} to {summary['last_start']}"
    return line


def findings(summary: dict[str, Any]) -> list[Finding]:
    found = []
    if summary["requests"]:
        found.append(Finding("outcomes", ", ".join(f"{k} x{v}" for k, v in summary["outcomes"].items())))
    gap = summary["smallest_gap"]
    if gap is not None:
        delay = "unknown" if gap["delay_in_force"] is None else f"{gap['delay_in_force']:.3f} s"
        found.append(
            Finding(
                "smallest gap between two starts", f"{gap['seconds']:.3f} s (delay in force {delay}) at {gap['at']}"
            )
        )
    short = summary["gaps_under_delay_listed"]
    found.append(
        Finding(
            f"gaps shorter than the delay (tolerance {summary['delay_tolerance']:.3f} s)",
            str(summary["gaps_under_delay"]),
            _listed(
                [
                    f"{g['at']}: {g['seconds']:.3f} s < {g['delay_in_force']:.3f} s, {g['after']} -> {g['before']}"
                    for g in short
                ],
                summary["gaps_under_delay"],
            ),
        )
    )
    if summary["max_in_flight_at"] is not None:
        found.append(
            Finding("most in flight at once", f"{summary['max_in_flight']} (from {summary['max_in_flight_at']})")
        )
    refusals = [
        f"{r['at']}: {r['url']}, "
        + ("no request after it" if r["waited"] is None else f"next request {r['waited']:.3f} s later")
        for r in summary["responses_429_listed"]
    ]
    found.append(Finding("429 answers", str(summary["responses_429"]), _listed(refusals, summary["responses_429"])))
    robots = summary["robots"]
    found.append(
        Finding(
            "robots.txt decisions",
            "" if robots else "none",
            tuple(
                f"{'allowed' if g['allowed'] else 'disallowed'} x{g['decisions']} by {g['rule'] or 'no rule'}"
                f" (e.g. {g['example']})"
                for g in robots
            ),
        )
    )
    return found


def text_report(domain: str, summary: dict[str, Any]) -> str:
    lines = [headline(domain, summary)]
    for finding in findings(summary):
        lines.append(f"  {finding.label}:" + (f" {finding.value}" if finding.value else ""))
        lines.extend(f"    {detail}" for detail in finding.details)
    return "\n".join(lines)


def _listed(details: list[str], count: int) -> tuple[str, ...]:
    """``details`` of ``count`` things, and how many more were not listed."""
    more = count - len(details)
    return (*details, f"… and {more} more") if more > 0 else tuple(details)

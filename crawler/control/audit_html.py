"""The audit of a site as one HTML page a site owner can read (``scrapy audit --html``): for each
domain, the summary the text report gives (``crawler.control.audit_report``), the gaps between
request starts against the delay each is judged by (``crawler.control.site_audit``), and the
requests over time, drawn as inline SVG. Static and self-contained: no script, and nothing to
fetch, which its content security policy forbids."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from crawler.control.audit_report import findings, headline
from crawler.control.site_audit import Gap, LoggedRequest, gaps_between, iso_time
from crawler.control.svg_plot import Frame, number_axis, time_axis, time_step

MAX_BUCKETS = 60
"""Bars of the requests over time at most: the width of one is a round clock interval."""

ANSWERS = {"answered": "answered", "refused": "answered 429", "unanswered": "no answer (an error)"}
"""The kinds of request in the bars, and what the legend calls them."""

STYLE = """
body{font:15px/1.45 system-ui,sans-serif;color:#1f2328;max-width:62rem;margin:2rem auto;padding:0 1rem}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.25rem;margin-top:2.5rem;border-bottom:1px solid #d1d9e0}
h3{font-size:1.05rem;margin:1.6rem 0 .4rem}.scope,figcaption,footer{color:#59636e}
dl.findings dt{font-weight:600}dl.findings dd{margin:0 0 .5rem 1.2rem}
dl.findings ul{margin:.2rem 0;padding-left:1.2rem;font-size:.9rem;overflow-wrap:anywhere}
figure{margin:0}svg.plot{max-width:100%;height:auto;font-family:system-ui,sans-serif}
figcaption{font-size:.9rem;margin-top:.3rem}footer{border-top:1px solid #d1d9e0;margin-top:3rem;font-size:.9rem}
.grid{stroke:#eaeef2}.axis,line.tick{stroke:#59636e}text.tick{font-size:11px;fill:#59636e}
text.title{font-size:12px;fill:#1f2328}.delay{fill:none;stroke:#0969da;stroke-width:2}
.gap{fill:#59636e;fill-opacity:.75}.gap.short{fill:#cf222e;fill-opacity:1}.gap.above{fill:#8250df}
.answered{fill:#8c959f;background:#8c959f}.refused{fill:#cf222e;background:#cf222e}
.unanswered{fill:#bf8700;background:#bf8700}.swatch{display:inline-block;width:.8em;height:.8em;margin:0 .3em 0 .8em}
.swatch.delay{height:3px;vertical-align:.2em;background:#0969da}.swatch.gap{border-radius:50%;background:#59636e}
.swatch.gap.short{background:#cf222e}.swatch.gap.above{background:#8250df}
"""

RULE = (
    "A request's start is when it left for the network; its delay in force, the least time the crawler then"
    " meant to keep between two starts of requests to the domain (robots.txt's Crawl-delay, or longer). A"
    " gap, from one start to the next whichever crawl process sent them, is judged against the delay in"
    " force when its second request left."
)


@dataclass(frozen=True, slots=True)
class DomainAudit:
    domain: str
    summary: dict[str, Any]
    """``site_audit.summarize``'s."""
    requests: list[LoggedRequest]
    """In start order (``site_audit.in_start_order``)."""


def audit_page(name: str, scope: str, audits: Sequence[DomainAudit]) -> str:
    """The page for the domains ``name`` means, audited over ``scope`` (what the window is, in words)."""
    title = f"What the crawler did to {name}"
    return "".join(
        [
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{escape(title)}</title><style>{STYLE}</style></head>\n<body>",
            f'<header><h1>{escape(title)}</h1><p class="scope">{escape(scope)}</p></header>\n',
            *(_section(audit) for audit in audits),
            f"<footer><p>{escape(RULE)}</p></footer>\n</body></html>\n",
        ]
    )


def _section(audit: DomainAudit) -> str:
    summary, requests = audit.summary, audit.requests
    parts = [
        f'<section class="domain" data-domain="{escape(audit.domain)}"><h2>{escape(audit.domain)}</h2>',
        f'<p class="headline">{escape(headline(audit.domain, summary))}</p><dl class="findings">',
    ]
    for finding in findings(summary):
        parts.append(f"<dt>{escape(finding.label)}</dt><dd>{escape(finding.value)}")
        if finding.details:
            parts.append("<ul>" + "".join(f"<li>{escape(detail)}</li>" for detail in finding.details) + "</ul>")
        parts.append("</dd>")
    parts.append("</dl>")
    if requests:
        tolerance = summary["delay_tolerance"]
        parts += ["<h3>Gaps between requests</h3>", gaps_figure(gaps_between(requests), tolerance)]
        parts += ["<h3>Requests over time</h3>", requests_figure(requests)]
    else:
        parts.append('<p class="empty">No request was logged in this window.</p>')
    parts.append("</section>\n")
    return "".join(parts)


def gaps_figure(gaps: list[Gap], tolerance: float) -> str:
    """Each gap a point at its second start, the delay it is judged by a line over it; red points
    are short. Gaps far above the longest delay are drawn at the top edge, so that the others
    stay readable."""
    if not gaps:
        return '<p class="empty">One request: no gap to judge.</p>'
    delays = [gap.delay for gap in gaps if gap.delay is not None]
    longest_delay, longest_gap = max(delays, default=0.0), max(gap.seconds for gap in gaps)
    top = max(longest_delay, min(longest_gap, 2 * longest_delay)) if longest_delay > 0 else longest_gap
    frame = Frame(time_axis(gaps[0].after.started, gaps[-1].before.started), number_axis(top, "gap (s)"))
    ceiling = frame.y_axis.end
    kinds = [(_kind(gap, tolerance, ceiling), gap) for gap in gaps]
    short, above = (sum(kind == name for kind, _ in kinds) for name in ("gap short", "gap above"))
    body = [f'<path class="delay" d="{_delay_steps(gaps, frame)}"/>']
    for drawn in ("gap", "gap above", "gap short"):  # the short ones last, over the others
        body += [_gap_point(gap, frame, ceiling, kind) for kind, gap in kinds if kind == drawn]
    caption = (
        "Each point is one gap: the time from a request's start to the next one's, at the second start."
        f' <span class="swatch delay"></span>The line is the delay in force when that second request left.'
        f' <span class="swatch gap short"></span>Shorter than it by more than {tolerance:.3f} s:'
        f" {short} of {len(gaps)}."
    )
    if above:
        caption += f' <span class="swatch gap above"></span>Longer than {ceiling:g} s, drawn at the top: {above}.'
    label = f"{len(gaps)} gaps between requests against the delay in force, {short} shorter than it"
    return f'<figure class="gaps">{frame.svg("gaps", label, body)}<figcaption>{caption}</figcaption></figure>'


def _kind(gap: Gap, tolerance: float, ceiling: float) -> str:
    if gap.short(tolerance):
        return "gap short"
    return "gap above" if gap.seconds > ceiling else "gap"


def _gap_point(gap: Gap, frame: Frame, ceiling: float, kind: str) -> str:
    x, y = frame.x(gap.before.started), frame.y(min(gap.seconds, ceiling))
    if kind == "gap":
        return f'<circle class="{kind}" cx="{x}" cy="{y}" r="2.5"/>'
    delay = "unknown" if gap.delay is None else f"{gap.delay:.3f} s"
    title = f"{iso_time(gap.before.started)}: {gap.seconds:.6f} s after the last start, delay {delay}: {gap.before.url}"
    return f'<circle class="{kind}" cx="{x}" cy="{y}" r="4"><title>{escape(title)}</title></circle>'


def _delay_steps(gaps: list[Gap], frame: Frame) -> str:
    """The delay each gap is judged by, level over the gap, rising or falling where it changed;
    broken where no delay was recorded."""
    path, end = [], None
    for gap in gaps:
        if gap.delay is None:
            end = None
            continue
        start, y = frame.x(gap.after.started), frame.y(gap.delay)
        path.append(f"V{y}" if end == start else f"M{start},{y}")
        path.append(f"H{(end := frame.x(gap.before.started))}")
    return "".join(path)


def requests_figure(requests: list[LoggedRequest]) -> str:
    """Bars of requests per round clock interval, stacked by how they were answered."""
    width = time_step(requests[-1].started - requests[0].started, MAX_BUCKETS)
    first = math.floor(requests[0].started / width)
    counts = Counter((math.floor(r.started / width) - first, _answer(r)) for r in requests)
    buckets = max(index for index, _ in counts) + 1
    tallest = max(sum(counts[index, kind] for kind in ANSWERS) for index in range(buckets))
    frame = Frame(
        time_axis(first * width, (first + buckets) * width),
        number_axis(tallest, f"requests per {_duration(width)}", whole=True),
    )
    body = []
    for index in range(buckets):
        left, right = frame.x((first + index) * width), frame.x((first + index + 1) * width)
        stacked = 0
        for kind, name in ANSWERS.items():
            if count := counts[index, kind]:
                top, bottom = frame.y(stacked + count), frame.y(stacked)
                stacked += count
                title = f"{iso_time((first + index) * width)}: {count} {name}"
                body.append(
                    f'<rect class="bar {kind}" x="{left + 0.5}" y="{top}" width="{max(right - left - 1, 1):.2f}"'
                    f' height="{round(bottom - top, 2)}"><title>{escape(title)}</title></rect>'
                )
    legend = "".join(f'<span class="swatch {kind}"></span>{name}' for kind, name in ANSWERS.items())
    label = f"{len(requests)} requests over time, per {_duration(width)}"
    return (
        f'<figure class="requests">{frame.svg("requests", label, body)}'
        f"<figcaption>Requests started per {_duration(width)}: {legend}.</figcaption></figure>"
    )


def _answer(request: LoggedRequest) -> str:
    if request.status is None:
        return "unanswered"
    return "refused" if request.status == 429 else "answered"


def _duration(seconds: float) -> str:
    for unit, length in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= length:
            count = seconds / length
            return f"{count:g} {unit}" + ("s" if unit == "day" and count != 1 else "")
    return f"{seconds:g} s"

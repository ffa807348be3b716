"""The HTML report of an audit, read back as a browser's parser reads it: what it draws for each
gap and each request, that it needs nothing from elsewhere, and the round ticks of its plots."""

from __future__ import annotations

from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest

from crawler.control.audit_html import DomainAudit, audit_page, gaps_figure, requests_figure
from crawler.control.site_audit import LoggedRequest, gaps_between, in_start_order, summarize
from crawler.control.svg_plot import (
    clock_label,
    multiples,
    number_axis,
    number_label,
    round_step,
    time_axis,
    time_step,
)

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC).timestamp()


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text, of a page."""

    def __init__(self, page: str):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def having(self, tag: str, css_class: str) -> list[dict[str, str | None]]:
        """The attributes of the ``tag`` elements whose classes include every one of ``css_class``."""
        wanted = set(css_class.split())
        return [a for t, a in self.tags if t == tag and wanted <= set((a.get("class") or "").split())]


def _requests(*starts: tuple[float, float | None], status: int | None = 200) -> list[LoggedRequest]:
    return [LoggedRequest(f"http://a.example/{s}", T0 + s, T0 + s + 0.05, status, "", d) for s, d in starts]


def _page(requests: list[LoggedRequest], tolerance: float = 0.01) -> Elements:
    rows = [
        {
            "url": r.url,
            "started_at": r.started,
            "ended_at": r.ended,
            "http_status": r.status,
            "outcome": r.outcome,
            "delay_in_force": r.delay,
        }
        for r in requests
    ]
    audit = DomainAudit("a.example", summarize(rows, tolerance), in_start_order(rows))
    return Elements(audit_page("a.example", "Every request logged.", [audit]))


def test_each_gap_is_a_point_and_the_short_ones_stand_out() -> None:
    page = _page(_requests((0, 1.0), (1.0, 0.5), (1.5, 0.5), (1.8, 0.5), (2.4, 0.5)))
    assert len(page.having("circle", "gap")) == 4
    short = page.having("circle", "gap short")
    assert len(short) == 1 and short[0]["r"] == "4"
    assert "gap (s)" in page.text and "0.300000 s after the last start" in "".join(page.text)
    assert len(page.having("svg", "plot gaps")) == len(page.having("svg", "plot requests")) == 1


def test_the_delay_line_steps_where_the_delay_changed_and_breaks_where_none_was_recorded() -> None:
    gaps = gaps_between(_requests((0, 1.0), (1.0, 0.5), (2.0, 1.0), (3.0, None), (4.0, 1.0)))
    figure = Elements(gaps_figure(gaps, 0.01))
    (line,) = figure.having("path", "delay")
    steps = line["d"] or ""
    # a line over each gap with a delay, joined where one gap ends as the next begins
    assert steps.count("M") == 2 and steps.count("V") == 1 and steps.count("H") == 3


def test_gaps_far_above_the_delay_are_drawn_at_the_top_edge() -> None:
    gaps = gaps_between(_requests((0, 0.5), (0.6, 0.5), (600.6, 0.5)))  # a pause of ten minutes
    figure = Elements(gaps_figure(gaps, 0.01))
    (above,) = figure.having("circle", "gap above")
    (near,) = [point for point in figure.having("circle", "gap") if point["class"] == "gap"]
    assert above["cy"] == figure.having("line", "grid")[-1]["y1"]  # the top grid line: 1 s
    assert float(near["cy"] or 0) > float(above["cy"] or 0)
    assert "Longer than 1 s, drawn at the top: 1." in "".join(figure.text)


def test_requests_over_time_are_bars_per_round_interval_by_answer() -> None:
    requests = _requests((0, 0.5), (0.5, 0.5), (1.0, 0.5), (59.0, 0.5))
    requests += _requests((61.0, 0.5), status=429) + _requests((62.0, 0.5), status=None)
    figure = Elements(requests_figure(in_start_order([_row_of(r) for r in requests])))
    assert [bar["class"] for bar in figure.having("rect", "bar")] == [
        "bar answered",  # 0-2 s: 3 requests
        "bar answered",  # 58-60 s
        "bar refused",  # 60-62 s
        "bar unanswered",  # 62-64 s
    ]
    assert "requests per 2 s" in figure.text
    assert "2025-03-01T12:00:00+00:00: 3 answered" in figure.text  # each bar's title


def _row_of(request: LoggedRequest) -> dict:
    return {
        "url": request.url,
        "started_at": request.started,
        "ended_at": request.ended,
        "http_status": request.status,
        "delay_in_force": request.delay,
    }


def test_the_page_needs_nothing_from_elsewhere_and_escapes_what_sites_sent() -> None:
    hostile = [
        LoggedRequest('http://a.example/"><script>alert(1)</script>', T0, T0 + 0.1, 200, "", 0.5),
        LoggedRequest("http://a.example/<b>", T0 + 0.1, T0 + 0.2, 200, "", 0.5),
    ]
    page = _page(hostile)
    assert not [tag for tag, _ in page.tags if tag in ("script", "link", "img", "iframe", "object", "b")]
    assert not [a for _, a in page.tags if "src" in a or "href" in a]
    (policy,) = [a for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert policy["content"] == "default-src 'none'; style-src 'unsafe-inline'"
    assert any("<script>alert(1)</script>" in text for text in page.text)  # shown, as text


def test_a_window_without_requests_or_with_one() -> None:
    empty = _page([])
    assert not empty.having("svg", "plot") and "No request was logged in this window." in empty.text
    one = _page(_requests((0, 1.0)))
    assert not one.having("svg", "plot gaps") and "One request: no gap to judge." in one.text
    assert len(one.having("rect", "bar answered")) == 1


def test_one_section_per_domain() -> None:
    audits = [DomainAudit(domain, summarize([], 0.01), []) for domain in ("h:81", "h:82")]
    page = Elements(audit_page("h", "Every request logged.", audits))
    assert [a["data-domain"] for a in page.having("section", "domain")] == ["h:81", "h:82"]
    assert "What the crawler did to h" in page.text


@pytest.mark.parametrize(
    ("span", "most", "step"),
    [(1.0, 5, 0.2), (0.52, 5, 0.2), (5.1, 5, 2.0), (100.0, 5, 20.0), (0.0, 5, 1.0), (7.0, 7, 1.0)],
)
def test_round_steps(span: float, most: int, step: float) -> None:
    assert round_step(span, most) == pytest.approx(step)


def test_round_clock_steps_and_their_labels() -> None:
    assert time_step(1.3, 60) == 0.1 and time_step(130, 60) == 5 and time_step(7200, 8) == 900
    assert time_step(10**9, 8) == 604800  # the longest there is
    noon = T0
    assert clock_label(noon + 1.5, 0.5) == "12:00:01.5"
    assert clock_label(noon + 15, 5) == "12:00:15"
    assert clock_label(noon + 900, 900) == "12:15"
    assert clock_label(noon, 86400) == "2025-03-01"
    assert number_label(0.4, 0.2) == "0.4" and number_label(20, 10) == "20" and number_label(0.05, 0.05) == "0.05"


def test_axes_end_at_round_values() -> None:
    axis = number_axis(0.52, "gap (s)")
    assert (axis.end, axis.step, axis.ticks()) == (0.6, 0.2, pytest.approx([0, 0.2, 0.4, 0.6]))
    assert number_axis(0, "x").end == 1.0
    assert number_axis(3, "requests", whole=True).ticks() == [0, 1, 2, 3]
    assert multiples(0.05, 0.95, 0.2) == pytest.approx([0.2, 0.4, 0.6, 0.8])
    day = time_axis(T0, T0 + 60)
    assert day.title == "time (UTC), 2025-03-01" and day.step == 10
    assert time_axis(T0, T0 + 86400).title == "time (UTC), 2025-03-01 to 2025-03-02"

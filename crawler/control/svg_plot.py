"""Plots drawn as inline SVG text, for reports that must open anywhere without a script: a frame
that maps data to pixels, with its axes, ticks at round values and, on a time axis, at round
clock times (UTC)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

WIDTH, HEIGHT = 880, 280
LEFT, RIGHT, TOP, BOTTOM = 64, 40, 12, 44
"""The SVG's size and the margins around the plot area (room for the axes' labels)."""

TIME_STEPS = (
    *(0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30),
    *(60, 120, 300, 600, 900, 1800),
    *(3600, 7200, 10800, 21600, 43200),
    *(86400, 172800, 604800),
)
"""Seconds between ticks of a time axis (and widths of its buckets): round clock intervals."""


def round_step(span: float, most: int) -> float:
    """The smallest of 1, 2 or 5 times a power of ten that cuts ``span`` in at most ``most`` steps."""
    if span <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(span / most))
    return next(factor * power for factor in (1, 2, 5, 10) if span / (factor * power) <= most)


def time_step(span: float, most: int) -> float:
    """The shortest of ``TIME_STEPS`` that cuts ``span`` seconds in at most ``most`` steps."""
    return next((step for step in TIME_STEPS if span / step <= most), TIME_STEPS[-1])


def clock_label(time: float, step: float) -> str:
    """A tick's time of day (UTC), as precise as its step needs; a date from a day's step on."""
    when = datetime.fromtimestamp(time, UTC)
    if step < 1:
        return when.strftime("%H:%M:%S.%f")[:-5]
    if step < 60:
        return when.strftime("%H:%M:%S")
    return when.strftime("%H:%M") if step < 86400 else when.strftime("%Y-%m-%d")


def number_label(value: float, step: float) -> str:
    """A tick's number, with the decimals its step needs."""
    decimals = -math.floor(math.log10(step)) if step < 1 else 0
    return f"{value:.{decimals}f}"


def multiples(start: float, end: float, step: float) -> list[float]:
    """The multiples of ``step`` from ``start`` to ``end``, both included."""
    first = math.ceil(start / step - 1e-9)
    return [_rounded(n * step) for n in range(first, math.floor(end / step + 1e-9) + 1)]


def _rounded(value: float) -> float:
    """A multiple of a step as written, not as floating point makes it (3 × 0.2 is 0.6)."""
    return round(value, 9)


@dataclass(frozen=True, slots=True)
class Axis:
    start: float
    end: float
    step: float
    """Between ticks."""
    title: str
    clock: bool = False
    """Ticks labelled as times of day (the values are Unix times)."""

    def ticks(self) -> list[float]:
        return multiples(self.start, self.end, self.step)

    def label(self, value: float) -> str:
        return clock_label(value, self.step) if self.clock else number_label(value, self.step)


def time_axis(start: float, end: float) -> Axis:
    """An axis of Unix times from ``start`` to ``end``, its ticks at round clock times."""
    first, last = (datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d") for t in (start, end))
    title = f"time (UTC), {first}" if first == last else f"time (UTC), {first} to {last}"
    return Axis(start, end, time_step(end - start, 8), title, clock=True)


def number_axis(top: float, title: str, whole: bool = False) -> Axis:
    """An axis from 0 to the round value at or above ``top`` (1 for nothing above 0); ``whole``:
    of things counted, its ticks whole numbers."""
    top = top if top > 0 else 1.0
    step = max(round_step(top, 5), 1.0) if whole else round_step(top, 5)
    return Axis(0.0, _rounded(math.ceil(top / step - 1e-9) * step), step, title)


@dataclass(frozen=True, slots=True)
class Frame:
    """The plot area, onto which ``x`` and ``y`` map data (y upwards)."""

    x_axis: Axis
    y_axis: Axis

    def x(self, value: float) -> float:
        return round(LEFT + _fraction(value, self.x_axis) * (WIDTH - LEFT - RIGHT), 2)

    def y(self, value: float) -> float:
        return round(HEIGHT - BOTTOM - _fraction(value, self.y_axis) * (HEIGHT - TOP - BOTTOM), 2)

    def svg(self, kind: str, label: str, body: list[str]) -> str:
        """The whole ``<svg>`` of class ``plot KIND``: grid, axes and their ticks, then ``body``."""
        bottom, right = HEIGHT - BOTTOM, WIDTH - RIGHT
        parts = [
            f'<svg class="plot {kind}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}"'
            f' width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{escape(label)}">',
            f"<title>{escape(label)}</title>",
        ]
        for value in self.y_axis.ticks():
            y = self.y(value)
            parts.append(f'<line class="grid" x1="{LEFT}" y1="{y}" x2="{right}" y2="{y}"/>')
            parts.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4}" text-anchor="end">')
            parts.append(f"{self.y_axis.label(value)}</text>")
        for value in self.x_axis.ticks():
            x = self.x(value)
            parts.append(f'<line class="tick" x1="{x}" y1="{bottom}" x2="{x}" y2="{bottom + 5}"/>')
            parts.append(f'<text class="tick" x="{x}" y="{bottom + 18}" text-anchor="middle">')
            parts.append(f"{self.x_axis.label(value)}</text>")
        parts += [
            f'<line class="axis" x1="{LEFT}" y1="{bottom}" x2="{right}" y2="{bottom}"/>',
            f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}"/>',
            f'<text class="title" x="{(LEFT + right) / 2}" y="{HEIGHT - 6}" text-anchor="middle">'
            f"{escape(self.x_axis.title)}</text>",
            f'<text class="title" transform="translate(14 {(TOP + bottom) / 2}) rotate(-90)" text-anchor="middle">'
            f"{escape(self.y_axis.title)}</text>",
            *body,
            "</svg>",
        ]
        return "".join(parts)


def _fraction(value: float, axis: Axis) -> float:
    span = axis.end - axis.start
    return (value - axis.start) / span if span else 0.5

"""Per-domain pacing chosen by people: ``CRAWLER_DOMAIN_OVERRIDES`` and the run-time controls an
operator sets (``domain_controls``). Pure: patterns in, one control per domain out.

A pattern is an exact host (``example.com``, or ``host:port`` for that port only),
``*.example.com`` (any subdomain, at any depth, not the apex) or ``*`` (every domain). The most
specific pattern wins: exact, then the longest wildcard, then ``*``. A run-time entry wins over
the setting field by field: an operator's concurrency with no delay keeps the setting's delay.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crawler.identity import key_host
from crawler.politeness.policy import DomainState

EVERY_DOMAIN = "*"


@dataclass(frozen=True, slots=True)
class DomainControl:
    concurrency: int | None = None
    min_delay: float | None = None
    paused: bool = False

    def apply(self, state: DomainState) -> bool:
        """Set the control on a domain's state; True when it changed anything."""
        before = (state.override_concurrency, state.override_delay, state.paused)
        state.override_concurrency, state.override_delay, state.paused = self.concurrency, self.min_delay, self.paused
        return before != (self.concurrency, self.min_delay, self.paused)

    def over(self, other: DomainControl) -> DomainControl:
        """This control, with ``other``'s values where this one has none."""
        return DomainControl(
            self.concurrency if self.concurrency is not None else other.concurrency,
            self.min_delay if self.min_delay is not None else other.min_delay,
            self.paused or other.paused,
        )


NO_CONTROL = DomainControl()


def parse_overrides(setting: Mapping[str, Any]) -> dict[str, DomainControl]:
    """``CRAWLER_DOMAIN_OVERRIDES`` (pattern -> ``{"concurrency": N, "min_delay": S}``) as
    controls; raises ValueError saying which entry is wrong and why."""
    controls = {}
    for pattern, values in setting.items():
        where = f"CRAWLER_DOMAIN_OVERRIDES[{pattern!r}]"
        if not isinstance(values, Mapping) or set(values) - {"concurrency", "min_delay"}:
            raise ValueError(f"{where} must be a dict with the keys concurrency and/or min_delay, got {values!r}")
        concurrency, min_delay = values.get("concurrency"), values.get("min_delay")
        if concurrency is not None and (
            isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
        ):
            raise ValueError(f"{where}: concurrency must be a whole number of at least 1, got {concurrency!r}")
        if min_delay is not None and (
            isinstance(min_delay, bool) or not isinstance(min_delay, int | float) or min_delay < 0
        ):
            raise ValueError(f"{where}: min_delay must be a number of seconds of at least 0, got {min_delay!r}")
        controls[normal_pattern(pattern)] = DomainControl(concurrency, None if min_delay is None else float(min_delay))
    return controls


def normal_pattern(pattern: str) -> str:
    pattern = pattern.strip().lower()
    if pattern == EVERY_DOMAIN:
        return pattern
    body = pattern.removeprefix("*.")
    if not body or "*" in body or "/" in body or " " in body:
        raise ValueError(f"not a domain pattern: {pattern!r} (an exact host, host:port, *.example.com or *)")
    return pattern


class ControlTable:
    """The control of each domain, from the setting's patterns and the run-time ones."""

    def __init__(
        self, configured: Mapping[str, DomainControl] | None = None, runtime: Mapping[str, DomainControl] | None = None
    ):
        self.configured = dict(configured or {})
        self.runtime = dict(runtime or {})
        self._resolved: dict[str, DomainControl] = {}

    def for_domain(self, domain: str) -> DomainControl:
        control = self._resolved.get(domain)
        if control is None:
            control = self._resolved[domain] = _lookup(self.runtime, domain).over(_lookup(self.configured, domain))
        return control

    def with_runtime(self, runtime: Mapping[str, DomainControl]) -> ControlTable:
        return ControlTable(self.configured, runtime)

    @property
    def crawl_paused(self) -> bool:
        """An operator paused the whole crawl (the domain ``*``)."""
        return self.runtime.get(EVERY_DOMAIN, NO_CONTROL).paused


def _lookup(patterns: Mapping[str, DomainControl], domain: str) -> DomainControl:
    domain = domain.lower()
    host = key_host(domain)
    for exact in (domain, host):
        if exact in patterns:
            return patterns[exact]
    # The longest matching wildcard: try the host's suffixes from the longest.
    labels = host.split(".")
    for start in range(1, len(labels)):
        control = patterns.get("*." + ".".join(labels[start:]))
        if control is not None:
            return control
    control = patterns.get(EVERY_DOMAIN, NO_CONTROL)
    # The whole crawl's pause is the engine's (it also stops domains not seen yet); a domain's
    # own pause comes from its own entry.
    return DomainControl(control.concurrency, control.min_delay) if control.paused else control

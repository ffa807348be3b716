"""What operators ask of running crawls: domain controls (pause, concurrency, minimum delay,
reset), read from the database."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from crawler.politeness.overrides import DomainControl, normal_pattern
from crawler.storage.backend import StorageBackend
from crawler.storage.controls import domain_controls
from crawler.storage.values import as_datetime

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Controls:
    domains: dict[str, DomainControl] = field(default_factory=dict)
    """Pattern -> control."""
    resets: dict[str, datetime] = field(default_factory=dict)
    """Domain -> when an operator last asked to reset it."""


async def read_controls(backend: StorageBackend) -> Controls:
    controls = Controls()
    for domain, paused, concurrency, min_delay, reset_at in await domain_controls(backend):
        try:
            pattern = normal_pattern(domain)
        except ValueError as exc:
            logger.debug("Ignoring a domain control: %s", exc)
            continue
        controls.domains[pattern] = DomainControl(
            int(concurrency) if concurrency else None, None if min_delay is None else float(min_delay), bool(paused)
        )
        if reset_at is not None:
            controls.resets[pattern] = as_datetime(reset_at)  # type: ignore[assignment]
    return controls

"""The ``scrapy`` commands the benchmarks start, in this Python, settings given as a mapping."""

from __future__ import annotations

import sys
from collections.abc import Mapping


def scrapy(*arguments: str, settings: Mapping[str, object] | None = None) -> list[str]:
    """``python -m scrapy ARGUMENTS -s NAME=VALUE …``."""
    options = [part for name, value in (settings or {}).items() for part in ("-s", f"{name}={value}")]
    return [sys.executable, "-m", "scrapy", *arguments, *options]

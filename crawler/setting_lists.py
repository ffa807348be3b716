"""List settings as users give them: a list, Scrapy's comma-separated string, or a JSON list
(``-s 'CRAWLER_ALLOWED_NETWORKS=["10.0.0.0/8"]'``), the form dict settings are given in."""

from __future__ import annotations

import json

from scrapy.settings import BaseSettings


def list_setting(settings: BaseSettings, name: str) -> list:
    """The setting as a list; raises ValueError for a JSON list that does not parse."""
    value = settings.get(name)
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            parsed = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"{name}: not a JSON list: {exc}") from None
        if not isinstance(parsed, list):
            raise ValueError(f"{name}: not a JSON list")
        return parsed
    return settings.getlist(name)

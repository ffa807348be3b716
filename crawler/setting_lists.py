"""List settings as users give them: a list, Scrapy's comma-separated string, or a JSON list
(``-s 'CRAWLER_ALLOWED_NETWORKS=["10.0.0.0/8"]'``), the form dict settings are given in."""

from __future__ import annotations

import json

from scrapy.settings import BaseSettings


def is_json_list(value: object) -> bool:
    """Whether a setting's value is given as a JSON list (a string that opens one)."""
    return isinstance(value, str) and value.lstrip().startswith("[")


def list_setting(settings: BaseSettings, name: str) -> list:
    """The setting as a list; raises ValueError for a JSON list that does not parse."""
    value = settings.get(name)
    if is_json_list(value):
        try:
            parsed = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"{name}: not a JSON list: {exc}") from None
        if not isinstance(parsed, list):
            raise ValueError(f"{name}: not a JSON list")
        return parsed
    return settings.getlist(name)

"""List settings given as lists, comma-separated strings or JSON lists, everywhere."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from crawler.addons.json_lists import LIST_SETTINGS, JsonLists
from crawler.setting_lists import list_setting
from tests.helpers import project_settings


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("10.0.0.0/8,127.0.0.1/32", ["10.0.0.0/8", "127.0.0.1/32"]),
        ('["10.0.0.0/8", "127.0.0.1/32"]', ["10.0.0.0/8", "127.0.0.1/32"]),
        (" [429, 503]", [429, 503]),
        (["fd00::/8"], ["fd00::/8"]),
        ("", []),
        (None, []),
    ],
)
def test_a_list_setting_in_every_form(value: object, expected: list) -> None:
    assert list_setting(Settings({"NAME": value}), "NAME") == expected


@pytest.mark.parametrize("value", ['["10.0.0.0/8"', '[{"a": 1}'])
def test_a_broken_json_list_is_a_clear_error(value: str) -> None:
    with pytest.raises(ValueError, match="^NAME: not a JSON list"):
        list_setting(Settings({"NAME": value}), "NAME")


def test_every_list_setting_of_the_project_is_read_as_json_once_the_addons_ran() -> None:
    assert {"CRAWLER_ALLOWED_NETWORKS", "CRAWLER_TRACKING_PARAMS", "CRAWLER_BLOCK_STATUSES"} <= set(LIST_SETTINGS)
    settings = Settings(project_settings())
    settings.set("CRAWLER_BLOCK_STATUSES", "[429, 503]", priority="cmdline")
    settings.set("CRAWLER_TRACKING_PARAMS", "utm_source,fbclid", priority="cmdline")
    JsonLists().update_settings(settings)
    assert settings.getlist("CRAWLER_BLOCK_STATUSES") == [429, 503]
    assert settings.getpriority("CRAWLER_BLOCK_STATUSES") == settings.getpriority("CRAWLER_TRACKING_PARAMS")
    assert settings.getlist("CRAWLER_TRACKING_PARAMS") == ["utm_source", "fbclid"]  # the comma form, as it was

"""Scrapy's remote-control extension is not loaded (nor aiohttp imported) unless turned on."""

from __future__ import annotations

import subprocess
import sys

import pytest
from scrapy.settings import Settings

from crawler.addons.remote_control import REMOTE_CONTROL, RemoteControlWhenEnabled
from tests.helpers import ROOT, crawl_environment

EXTENSIONS_LOADED = """
import sys
from scrapy.extension import ExtensionManager
from scrapy.utils.project import get_project_settings
from scrapy.utils.reactor import install_reactor
from scrapy.utils.test import get_crawler
from crawler.spiders.links import LinksSpider
settings = get_project_settings()
install_reactor(settings["TWISTED_REACTOR"])
settings.set("REMOTE_CONTROL_ENABLED", sys.argv[1] == "on", priority="cmdline")
crawler = get_crawler(LinksSpider, settings.copy_to_dict())
ExtensionManager.from_crawler(crawler)
print("aiohttp" in sys.modules, "scrapy.extensions.remote_control" in sys.modules)
"""


def test_taken_out_of_the_extensions_while_off() -> None:
    settings = Settings()
    assert settings.getwithbase("EXTENSIONS")[REMOTE_CONTROL] == 0  # Scrapy's default
    settings.set("REMOTE_CONTROL_ENABLED", False, priority="project")
    RemoteControlWhenEnabled().update_settings(settings)
    assert REMOTE_CONTROL not in settings.getwithbase("EXTENSIONS")  # listed as None, it would still be imported
    settings = Settings({"REMOTE_CONTROL_ENABLED": True})
    RemoteControlWhenEnabled().update_settings(settings)
    assert settings.getwithbase("EXTENSIONS")[REMOTE_CONTROL] == 0


@pytest.mark.integration
def test_a_crawl_loads_it_only_when_turned_on() -> None:
    def loaded(switch: str) -> str:
        result = subprocess.run(
            [sys.executable, "-c", EXTENSIONS_LOADED, switch],
            cwd=ROOT,
            env=crawl_environment(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout.strip()

    assert loaded("off") == "False False"
    assert loaded("on") == "True True"

"""Scrapy components a setting switches off are not loaded (nor what they import) unless it is
on: the remote-control extension (aiohttp), the telnet console, the cookies middleware
(tldextract)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from scrapy.settings import Settings

from crawler.addons.switched_off import SWITCHED, SwitchedOffComponents
from tests.helpers import ROOT, crawl_environment

COMPONENTS_LOADED = """
import sys
from scrapy.core.downloader.middleware import DownloaderMiddlewareManager
from scrapy.extension import ExtensionManager
from scrapy.utils.project import get_project_settings
from scrapy.utils.reactor import install_reactor
from scrapy.utils.test import get_crawler
from crawler.spiders.links import LinksSpider
settings = get_project_settings()
install_reactor(settings["TWISTED_REACTOR"])
for switch in ("REMOTE_CONTROL_ENABLED", "TELNETCONSOLE_ENABLED", "COOKIES_ENABLED"):
    settings.set(switch, sys.argv[1] == "on", priority="cmdline")
crawler = get_crawler(LinksSpider, settings.copy_to_dict())
ExtensionManager.from_crawler(crawler)
DownloaderMiddlewareManager.from_crawler(crawler)
modules = ("aiohttp", "scrapy.extensions.remote_control", "scrapy.extensions.telnet", "tldextract",
           "scrapy.downloadermiddlewares.cookies")
print(" ".join(str(name in sys.modules) for name in modules))
"""


@pytest.mark.parametrize("component", sorted(SWITCHED))
def test_taken_out_of_its_list_while_off(component: str) -> None:
    listed_in, switch = SWITCHED[component]
    settings = Settings()
    assert component in settings.getwithbase(listed_in)  # Scrapy's default
    settings.set(switch, False, priority="project")
    SwitchedOffComponents().update_settings(settings)
    assert component not in settings.getwithbase(listed_in)
    settings = Settings({switch: True})
    SwitchedOffComponents().update_settings(settings)
    assert component in settings.getwithbase(listed_in)


@pytest.mark.integration
def test_a_crawl_loads_them_only_when_turned_on() -> None:
    def loaded(switch: str) -> str:
        result = subprocess.run(
            [sys.executable, "-c", COMPONENTS_LOADED, switch],
            cwd=ROOT,
            env=crawl_environment(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout.strip()

    assert loaded("off") == "False False False False False"
    assert loaded("on") == "True True True True True"

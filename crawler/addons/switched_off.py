"""Scrapy components that a setting switches off, not loaded while it does.

Scrapy imports every component its lists name and only then lets it read its switch (and raise
``NotConfigured``). Some imports cost a share of every start that a crawl with the component off
would pay for nothing: the remote-control extension imports aiohttp's web server (about 80 ms),
the cookies middleware tldextract (about 50 ms). This project keeps those components off by
default (``REMOTE_CONTROL_ENABLED``, ``COOKIES_ENABLED``, ``TELNETCONSOLE_ENABLED`` are False),
so each is taken out of its list while its switch is off. An add-on because the switches are
read once every source of settings has been (``-s`` included).
"""

from __future__ import annotations

from scrapy.settings import BaseSettings

SWITCHED: dict[str, tuple[str, str]] = {
    "scrapy.extensions.remote_control.RemoteControl": ("EXTENSIONS", "REMOTE_CONTROL_ENABLED"),
    "scrapy.extensions.telnet.TelnetConsole": ("EXTENSIONS", "TELNETCONSOLE_ENABLED"),
    "scrapy.downloadermiddlewares.cookies.CookiesMiddleware": ("DOWNLOADER_MIDDLEWARES", "COOKIES_ENABLED"),
}
"""Component: the setting that lists it, the setting that switches it on."""


class SwitchedOffComponents:
    def update_settings(self, settings: BaseSettings) -> None:
        for component, (listed_in, switch) in SWITCHED.items():
            if settings.getbool(switch):
                continue
            for name in (f"{listed_in}_BASE", listed_in):
                if component in settings[name]:
                    del settings[name][component]

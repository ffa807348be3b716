"""Scrapy's remote-control extension loaded only when it is turned on.

Scrapy lists ``RemoteControl`` among its base extensions and reads ``REMOTE_CONTROL_ENABLED``
only once the class is loaded, and loading it imports aiohttp's web server at every start. This
project keeps it off (``REMOTE_CONTROL_ENABLED = False``), so it is taken out of the extensions
unless turned on. An add-on because the switch is read once every source of settings has been
(``-s`` included).
"""

from __future__ import annotations

from scrapy.settings import BaseSettings

REMOTE_CONTROL = "scrapy.extensions.remote_control.RemoteControl"


class RemoteControlWhenEnabled:
    def update_settings(self, settings: BaseSettings) -> None:
        if not settings.getbool("REMOTE_CONTROL_ENABLED"):
            # Removed, not set to None: Scrapy imports every listed extension, disabled or not.
            for name in ("EXTENSIONS_BASE", "EXTENSIONS"):
                if REMOTE_CONTROL in settings[name]:
                    del settings[name][REMOTE_CONTROL]

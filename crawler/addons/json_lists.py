"""Every list setting of the project also as a JSON list: a string given with ``-s`` (or by
scrapyd's ``setting=``) that is a JSON list becomes that list, at the priority it was given, once
every source of settings has been read. (The address guard's resolver, made from the process's
settings before add-ons run, reads its list with the same function.)"""

from __future__ import annotations

from scrapy.settings import BaseSettings

from crawler import settings as defaults
from crawler.setting_lists import is_json_list, list_setting

LIST_SETTINGS = tuple(name for name, value in vars(defaults).items() if name.isupper() and isinstance(value, list))


class JsonLists:
    def update_settings(self, settings: BaseSettings) -> None:
        for name in LIST_SETTINGS:
            if is_json_list(settings.get(name)):
                settings.set(name, list_setting(settings, name), priority=settings.getpriority(name))

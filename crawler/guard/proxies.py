"""The HTTP proxies a crawl goes through: ``CRAWLER_PROXY`` (``http://user:password@host:port``, for
every request) and the ``http_proxy``/``https_proxy`` environment variables Scrapy's
``HttpProxyMiddleware`` reads. A proxy resolves the names it is given itself, so with a proxy the
address guard checks a URL's host name before the request goes (``ProxyMiddleware``), and the
proxies' own hosts are allowed as what the crawler connects to."""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit
from urllib.request import getproxies

from scrapy.settings import BaseSettings

PROXIED_SCHEMES = ("http", "https")


def configured_proxies(settings: BaseSettings) -> list[str]:
    """The proxy URLs the crawl may use, credentials included."""
    found = [settings.get("CRAWLER_PROXY") or ""]
    environment = getproxies()
    found.extend(environment.get(scheme, "") for scheme in PROXIED_SCHEMES)
    return list(dict.fromkeys(url for url in found if url))


def bypasses_proxy(host: str, no_proxy: list[str]) -> bool:
    """Whether ``host`` goes direct: it is an entry of ``no_proxy`` or under one (``example.com``
    and ``.example.com`` both cover ``www.example.com``), or the entry is ``*``."""
    host = host.lower().rstrip(".")
    for entry in no_proxy:
        entry = entry.strip().lower().rstrip(".")
        if entry == "*" or (entry and (host == entry.lstrip(".") or host.endswith("." + entry.lstrip(".")))):
            return True
    return False


def proxy_host(url: str) -> str | None:
    """The host of a proxy URL (``host:port`` alone is taken as an http proxy, as urllib does)."""
    return _split(url).hostname


def through_proxy(reason: str, meta: dict) -> str:
    """``reason`` naming the proxy the request went through, if any (a refused or silent proxy
    is not the site's fault), without the proxy's credentials."""
    proxy = meta.get("proxy")
    return f"{reason} (through the proxy {shown_proxy(proxy)})" if proxy else reason


def shown_proxy(url: str) -> str:
    """A proxy URL fit for a row or a log line: without its credentials."""
    parts = _split(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def _split(url: str) -> SplitResult:
    """A proxy URL's parts; ``host:port`` alone is an http proxy, as urllib takes it."""
    return urlsplit(url if "://" in url else f"http://{url}")

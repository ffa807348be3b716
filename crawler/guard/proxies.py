"""The HTTP proxies a crawl goes through: ``CRAWLER_PROXY`` (``http://user:password@host:port``, for
every request) and the ``http_proxy``/``https_proxy`` environment variables Scrapy's
``HttpProxyMiddleware`` reads. A proxy resolves the names it is given itself, so with a proxy the
address guard checks a URL's host name before the request goes (``ProxyMiddleware``), and the
proxies' own hosts are allowed as what the crawler connects to."""

from __future__ import annotations

from urllib.parse import urlsplit
from urllib.request import getproxies

from scrapy.settings import BaseSettings

PROXIED_SCHEMES = ("http", "https")


def configured_proxies(settings: BaseSettings) -> list[str]:
    """The proxy URLs the crawl may use, credentials included."""
    found = [settings.get("CRAWLER_PROXY") or ""]
    environment = getproxies()
    found.extend(environment.get(scheme, "") for scheme in PROXIED_SCHEMES)
    return list(dict.fromkeys(url for url in found if url))


def proxy_host(url: str) -> str | None:
    """The host of a proxy URL (``host:port`` alone is taken as an http proxy, as urllib does)."""
    return urlsplit(url if "://" in url else f"http://{url}").hostname

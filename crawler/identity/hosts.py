"""A URL's host as the crawl keys it: the domain of politeness (host and port, as robots.txt is
scoped) and the site of scope (the host without a leading ``www.``); the domains a name given
by people means."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

# An absolute URL as the normal form writes it: its authority ends at the first "/", "?" or "#".
_NORMAL_AUTHORITY = re.compile(r"[a-z][a-z0-9+.-]*://([^/?#\\\s\[\]]*)[/?#]")


def netloc_key(netloc: str) -> str:
    """The host and port of a URL's authority, without user information, lowercase."""
    return netloc.rpartition("@")[2].lower()


def host_of(url: str) -> str:
    """The host, with a non-default port if any, lowercase."""
    # Called for every new link: a normal URL's authority is read with one regular expression
    # (not for non-ASCII: urlsplit refuses hosts that NFKC normalization would change).
    normal = _NORMAL_AUTHORITY.match(url) if url.isascii() else None
    return netloc_key(normal.group(1) if normal else urlsplit(url).netloc)


def site_of(url: str) -> str:
    """The host without a leading ``www.``, with a non-default port if any."""
    netloc = host_of(url)
    return netloc[4:] if netloc.startswith("www.") else netloc


def key_host(domain: str) -> str:
    """The host of a domain key: ``host``, ``host:port``, ``[v6]`` or ``[v6]:port``."""
    if domain.startswith("["):
        return domain[: domain.index("]") + 1] if "]" in domain else domain
    return domain.partition(":")[0]


def host_order(domain: str) -> tuple[str, str]:
    """A sort key of domain keys: by host, then port (``a:80`` before ``a0:80``)."""
    return key_host(domain), domain


def named_domains(name: str, domains: Iterable[str]) -> list[str]:
    """The domain keys among ``domains`` that ``name`` means, in ``host_order``: a key
    (``host:port``) means itself; a host without its port means that host on every port (``host``
    itself included)."""
    name = name.strip().lower()
    every_port = key_host(name) == name
    named = (key for key in domains if key == name or (every_port and key_host(key) == name))
    return sorted(named, key=host_order)

"""URL identity: the normal form, its hash and its SURT key, and the host the crawl keys it by
(and the keys a host names); and the id of a crawl (``crawls``)."""

from crawler.identity.hosts import host_of, host_order, key_host, named_domains, netloc_key, site_of
from crawler.identity.normalize import (
    DEFAULT_TRACKING_PARAMS,
    InvalidURL,
    UrlNormalizer,
    normalize_url,
    url_hash,
)
from crawler.identity.surt import surt_key

__all__ = [
    "DEFAULT_TRACKING_PARAMS",
    "InvalidURL",
    "UrlNormalizer",
    "host_of",
    "host_order",
    "key_host",
    "named_domains",
    "netloc_key",
    "normalize_url",
    "site_of",
    "surt_key",
    "url_hash",
]

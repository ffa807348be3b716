"""URL identity: the normal form, its hash and its SURT key."""

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
    "normalize_url",
    "surt_key",
    "url_hash",
]

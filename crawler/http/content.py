"""Which content a crawl keeps: media types by an accept list, then a reject list, with
wildcards (``text/*``, ``application/*+xml``); URLs whose extension is never fetched (``.pdf``)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from fnmatch import fnmatchcase
from urllib.parse import urlsplit


def content_type_allowed(media_type: str | None, accept: Iterable[str], reject: Iterable[str]) -> bool:
    """Whether ``media_type`` passes the accept list, then the reject list. Unknown types pass."""
    if not media_type:
        return True
    return any(fnmatchcase(media_type, p) for p in accept) and not any(fnmatchcase(media_type, p) for p in reject)


def ignored_extension(url: str, extensions: frozenset[str]) -> str | None:
    """The extension of ``url``'s path (``.pdf``) when it is one of ``extensions``."""
    extension = posixpath.splitext(urlsplit(url).path)[1].lower()
    return extension if extension in extensions else None


def extension_set(extensions: Iterable[str]) -> frozenset[str]:
    """``pdf``, ``.PDF`` → ``.pdf``; empty entries dropped."""
    return frozenset("." + e.strip().lower().lstrip(".") for e in extensions if e.strip())

"""Seeds from spider arguments: ``-a url=a,b`` and ``-a seeds_file=PATH`` (one per line)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

_SCHEMES = ("http", "https")


class SeedError(ValueError):
    """Seed arguments that cannot start a crawl (a usage error)."""


def parse_seeds(url: str | None = None, seeds_file: str | None = None) -> list[str]:
    """Seed URLs in order, without duplicates. A bare domain becomes ``https://domain/``."""
    raw: list[str] = []
    if url:
        raw.extend(url.split(","))
    if seeds_file:
        try:
            lines = Path(seeds_file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise SeedError(f"cannot read the seeds file {seeds_file}: {exc}") from exc
        raw.extend(line for line in lines if not line.lstrip().startswith("#"))
    seeds = [_with_scheme(s.strip()) for s in raw if s.strip()]
    if not seeds:
        raise SeedError("no seed: pass -a url=URL[,URL…] or -a seeds_file=PATH")
    return list(dict.fromkeys(seeds))


def _with_scheme(seed: str) -> str:
    if "://" in seed:
        scheme = seed.partition("://")[0].lower()
        if scheme not in _SCHEMES:
            raise SeedError(f"unsupported scheme {scheme}: in seed {seed!r}: only http and https URLs are crawled")
        return seed
    parts = urlsplit(f"https://{seed}")
    return f"https://{parts.netloc}{parts.path or '/'}" + (f"?{parts.query}" if parts.query else "")

"""SURT (Sort-friendly URI Reordering Transform) keys: ``com,example)/path?query``.

Pages of one site sort together and sub-domains sit under their parent. The scheme is
left out and ``www`` dropped, as Heritrix and the Wayback Machine do.
"""

from __future__ import annotations

from urllib.parse import urlsplit


def surt_key(normal_url: str) -> str:
    """The SURT key of a URL already in normal form (see ``normalize_url``)."""
    parts = urlsplit(normal_url)
    host = parts.hostname or ""
    labels = host.split(".")
    if ":" in host or _is_ipv4(labels):
        key = f"[{host}]" if ":" in host else host
    else:
        if len(labels) > 2 and labels[0] == "www":
            labels = labels[1:]
        key = ",".join(reversed(labels))
    if parts.port:
        key = f"{key}:{parts.port}"
    path = parts.path or "/"
    return f"{key}){path}" + (f"?{parts.query}" if parts.query else "")


def _is_ipv4(labels: list[str]) -> bool:
    return len(labels) == 4 and all(label.isdigit() for label in labels)

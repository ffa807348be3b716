"""Small builders for the bodies the sites serve."""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(slots=True)
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def html(
    title: str, links: Iterable[str] = (), *, body: str = "", head: str = "", nofollow: Iterable[str] = ()
) -> Reply:
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    anchors += "".join(f'<li><a rel="nofollow" href="{href}">{href}</a></li>' for href in nofollow)
    page = (
        f"<!DOCTYPE html><html><head><title>{title}</title>{head}</head>"
        f"<body><h1>{title}</h1><p>{body or 'Text of ' + title}</p>"
        f"<script>var hidden = 'script text';</script><ul>{anchors}</ul></body></html>"
    )
    return Reply(body=page.encode(), headers={"Content-Type": "text/html; charset=utf-8"})


def text(body: str, status: int = 200, content_type: str = "text/plain") -> Reply:
    return Reply(status, body.encode(), {"Content-Type": content_type})


def xml(body: str) -> Reply:
    return Reply(200, body.encode(), {"Content-Type": "application/xml"})


def gzipped(reply: Reply, content_type: str = "application/x-gzip") -> Reply:
    return Reply(reply.status, gzip.compress(reply.body), {"Content-Type": content_type})


def urlset(urls: Iterable[str], lastmod: str = "2024-05-01", extra: str = "") -> str:
    entries = "".join(
        f"<url><loc>{u}</loc><lastmod>{lastmod}</lastmod><changefreq>weekly</changefreq><priority>0.7</priority></url>"
        for u in urls
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}{extra}</urlset>'
    )


def sitemapindex(urls: Iterable[str]) -> str:
    entries = "".join(f"<sitemap><loc>{u}</loc></sitemap>" for u in urls)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</sitemapindex>'
    )


def redirect(location: str, status: int = 301) -> Reply:
    return Reply(status, b"", {"Location": location, "Content-Type": "text/html"})


NOT_FOUND = Reply(404, b"<html><body>not found</body></html>", {"Content-Type": "text/html"})

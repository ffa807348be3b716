"""Sitemap discovery and parsing (XML urlset and index, plain text, RSS, Atom; gzip)."""

from crawler.sitemaps.parser import SitemapDocument, SitemapEntry, SitemapError, parse_sitemap

__all__ = ["SitemapDocument", "SitemapEntry", "SitemapError", "parse_sitemap"]

"""The crawl's spiders: ``sitemap`` (discover from sitemaps) and ``links`` (follow links)."""

"""What to crawl and in which order: seeds, scope and priorities."""

"""crawler: a polite, adaptive, distributed web crawler built on Scrapy."""

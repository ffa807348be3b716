"""What the crawler adds to Scrapy's downloader."""

"""The HTTP download handler: Scrapy's HTTP/1.1 handler with bounded headers and the address
guard's refusals reported as such."""

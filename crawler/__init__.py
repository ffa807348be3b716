"""crawler: a polite, adaptive, distributed web crawler built on Scrapy."""

# Imported first, while the import stack is short: Scrapy's deprecated TLS class aliases name
# their module through inspect.stack(), whose cost grows with the depth of the import stack
# (docs/design-notes.md).
import scrapy.core.downloader.contextfactory  # noqa: F401

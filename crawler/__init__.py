"""crawler: a polite, adaptive, distributed web crawler built on Scrapy."""

# Imported first, while the import stack is short: Scrapy's deprecated TLS class aliases name
# their module through inspect.stack(), whose cost grows with the depth of the import stack
# (docs/design-notes.md). The parent package first, then each module that makes aliases on its
# own, so that none is imported from inside another's import (the order is the point).
import scrapy.core.downloader

# isort: split
import scrapy.core.downloader.tls

# isort: split
import scrapy.core.downloader.contextfactory  # noqa: F401

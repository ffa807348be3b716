"""crawler: a polite, adaptive, distributed web crawler built on Scrapy."""

# Imported first, while the import stack is short: Scrapy's deprecated TLS class aliases name
# their module through inspect.stack(), which reads every frame of the stack and, for each
# frame of the import machinery, scans all loaded modules. Imported where the spiders import
# it, ten modules deep, that took 0.25 s of CPU at every start; from here, 0.1 s.
import scrapy.core.downloader.contextfactory  # noqa: F401

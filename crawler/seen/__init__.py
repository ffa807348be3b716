"""The seen-request filters of a shared crawl, in Redis: requests are marked in the step that
queues them (``seen.lua``). ``exact`` keeps 8 bytes a request, ``bloom`` a fixed size for a
capacity and error rate. A crawl in one process uses Scrapy's own dupefilter."""

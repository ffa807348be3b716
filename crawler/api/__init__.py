"""``scrapy serve``: the HTTP API, the dashboard and crawl-wide Prometheus metrics, in a process
of its own beside the crawl processes (aiohttp on asyncio, psycopg's async pool or SQLite in a
thread, redis.asyncio)."""

"""Settings of the crawler project.

Scrapy's own settings are reused where one exists; the project's own start with ``CRAWLER_``
and all have their default here. ``docs/settings.md`` documents every one of them.
"""

import os

BOT_NAME = "crawler"
SPIDER_MODULES = ["crawler.spiders"]
NEWSPIDER_MODULE = "crawler.spiders"
COMMANDS_MODULE = "crawler.commands"

# Identify ourselves with a product token and a contact URL.
USER_AGENT = os.environ.get("CRAWLER_USER_AGENT", "crawler/0.1 (+https://github.com/crawler/crawler)")

# --- Politeness (defaults of the rules table in the design) ---------------------------------
ROBOTSTXT_OBEY = True
# The domain limiter paces every domain (CRAWLER_DEFAULT_DELAY and the rest below); Scrapy's own
# per-process slot delay would pace a second time and cannot coordinate processes.
DOWNLOAD_DELAY = 0
CONCURRENT_REQUESTS = 32
# The base per-domain concurrency of the limiter, which lowers it as the learned delay grows.
CONCURRENT_REQUESTS_PER_DOMAIN = 2
COOKIES_ENABLED = False
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 10 * 1024 * 1024
DOWNLOAD_WARNSIZE = 0
REDIRECT_MAX_TIMES = 5
RETRY_TIMES = 5
RETRY_HTTP_CODES = [429, 500, 502, 503, 504, 522, 524]

SCHEDULER = "crawler.frontier.scheduler.FrontierScheduler"
SCHEDULER_PRIORITY_QUEUE = "crawler.frontier.queue.PolitePriorityQueue"
ROBOTSTXT_USER_AGENT = "crawler"
DOWNLOADER_MIDDLEWARES = {
    # Replaces Scrapy's RobotsTxtMiddleware at its place.
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "crawler.middlewares.robots.RobotsMiddleware": 100,
    # Replaces Scrapy's RetryMiddleware at its place: backoff through the frontier.
    "scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
    "crawler.middlewares.retry.BackoffRetryMiddleware": 550,
    # Under redirects (600): only final answers are judged.
    "crawler.middlewares.filters.ContentTypeFilterMiddleware": 585,
    # Above redirects (600) and retries (550): sees every response as it arrives.
    "crawler.middlewares.limiter.LimiterMiddleware": 800,
}

CRAWLER_LIMITER_ENABLED = True
CRAWLER_DEFAULT_DELAY = 1.0
CRAWLER_MIN_DELAY = 0.0
CRAWLER_ROBOTS_DELAY_CAP = 60.0
CRAWLER_MAX_DELAY = 60.0
CRAWLER_CONCURRENCY_STEP = 5.0
CRAWLER_PROBE_AFTER = 20
CRAWLER_BLOCK_CAP = 600.0
CRAWLER_LATENCY_FACTOR = 1.0
CRAWLER_CIRCUIT_FAILURES = 5
CRAWLER_CIRCUIT_OPEN_SECONDS = 60.0
CRAWLER_CIRCUIT_CLOSE_SUCCESSES = 2
CRAWLER_RETRY_BACKOFF_CAP = 600.0
CRAWLER_ACCEPT_CONTENT_TYPES = ["text/*", "application/xhtml+xml", "application/xml", "application/*+xml", "application/json"]
CRAWLER_REJECT_CONTENT_TYPES: list[str] = []
CRAWLER_ROBOTS_TTL = 3600.0
CRAWLER_ROBOTS_RETRY_SECONDS = 60.0
CRAWLER_ROBOTS_FAIL_OPEN = False

# --- Link following ----------------------------------------------------------------------------
DEPTH_LIMIT = 10
DEPTH_STATS_VERBOSE = True
# Breadth-first: first in, first out within a priority.
SCHEDULER_DISK_QUEUE = "scrapy.squeues.PickleFifoDiskQueue"
SCHEDULER_MEMORY_QUEUE = "crawler.frontier.compact.CompactFifoMemoryQueue"

CRAWLER_MAX_PAGES = 0
CRAWLER_JOB_FAILURE_THRESHOLD = 20
CRAWLER_CANCEL_429_STREAK = 0
EXTENSIONS = {
    "crawler.extensions.job_health.JobHealth": 500,
    "crawler.extensions.gc_freeze.GcFreeze": 0,
    "crawler.extensions.reactor_heartbeat.ReactorHeartbeat": 0,
}
CRAWLER_GC_FREEZE = True
CRAWLER_MAX_LINKS_PER_PAGE = 1000
CRAWLER_RESPECT_NOFOLLOW = True
CRAWLER_FOLLOW_CANONICAL = True
CRAWLER_SCOPE = "site"
CRAWLER_TRACKING_PARAMS = [
    "utm_*", "gclid", "gclsrc", "dclid", "fbclid", "msclkid", "yclid",
    "mc_cid", "mc_eid", "_ga", "_gl", "igshid",
]  # fmt: skip

# --- Sitemaps ----------------------------------------------------------------------------------
CRAWLER_SITEMAP_FALLBACK_PATHS = ["/sitemap.xml", "/sitemap_index.xml"]
CRAWLER_SITEMAP_MAX_DEPTH = 5
CRAWLER_SITEMAP_MAX_SIZE = 50 * 1024 * 1024
CRAWLER_SITEMAP_STRICT = False

# --- Storage -----------------------------------------------------------------------------------
DATABASE_URL = os.environ.get("DATABASE_URL", "sqlite:///crawler.db")
CRAWLER_STORE_BODY = True
CRAWLER_STORE_BODY_MAXSIZE = 2 * 1024 * 1024
CRAWLER_STORE_LINKS = True
CRAWLER_BATCH_SIZE = 100
CRAWLER_BATCH_SECONDS = 1.0
CRAWLER_STORAGE_MAX_PENDING_ROWS = 10_000
CRAWLER_STORAGE_RETRY_MAX_DELAY = 30.0
CRAWLER_STORAGE_SHUTDOWN_TIMEOUT = 300.0
CRAWLER_UNSAVED_ROWS_DIR = "."

ITEM_PIPELINES = {
    "crawler.pipelines.storage.StoragePipeline": 800,
}

# --- Several processes, one crawl (REDIS_URL) ------------------------------------------------
# Set REDIS_URL and every process started with the same crawl id shares one frontier, one
# limiter state, one robots.txt cache and one seen filter (scrapy-redis, with this project's
# queue class). Unset, everything stays in the process.
REDIS_URL = os.environ.get("REDIS_URL", "")
SCHEDULER_QUEUE_CLASS = "crawler.shared.queue.SharedFrontierQueue"
CRAWLER_CRAWL_ID = ""
CRAWLER_LEASE_SECONDS = 120.0
CRAWLER_IDLE_CLOSE_SECONDS = 0.0
CRAWLER_REDIS_POLL_SECONDS = 0.25
CRAWLER_REDIS_TIMEOUT = 5.0
CRAWLER_REDIS_META_KEYS = [
    "depth", "discovered_via", "referrer", "sitemap_lastmod", "sitemap_changefreq", "sitemap_priority",
    "sitemap_depth", "download_maxsize", "dont_filter_content_type", "dont_obey_robotstxt", "not_before",
    "retry_times", "redirect_urls", "redirect_reasons", "redirect_times", "redirect_ttl",
    "handle_httpstatus_all", "handle_httpstatus_list", "dont_retry", "dont_redirect",
]  # fmt: skip
CRAWLER_REDIS_LOCAL_META_KEYS = ["discovery"]
CRAWLER_SEEN_FILTER = "exact"
CRAWLER_BLOOM_CAPACITY = 10_000_000
CRAWLER_BLOOM_ERROR_RATE = 1e-6
# Redis off the reactor: leased requests popped ahead, retries of a Redis outage, the delivery
# cap, the time a worker waits for Redis at its end, dead crawls reclaimed.
CRAWLER_REDIS_PREFETCH = 4
CRAWLER_REDIS_RETRY_SECONDS = 1.0
CRAWLER_REDIS_CLOSE_TIMEOUT = 10.0
CRAWLER_MAX_DELIVERIES = 5
CRAWLER_CRAWL_REAP_SECONDS = 600.0
# A log line (and the reactor's lag) every N seconds; 0: off.
CRAWLER_REACTOR_HEARTBEAT_SECONDS = 0.0

# --- Runtime -----------------------------------------------------------------------------------
LOGSTATS_INTERVAL = 10.0
FEED_EXPORT_ENCODING = "utf-8"
TELNETCONSOLE_ENABLED = False

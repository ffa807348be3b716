"""Settings of the crawler project.

Scrapy's own settings are reused where one exists; the project's own start with ``CRAWLER_``
and all have their default here. ``docs/settings.md`` documents every one of them.
"""

import os

from scrapy.linkextractors import IGNORED_EXTENSIONS

from crawler.identity import DEFAULT_TRACKING_PARAMS

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

# With REDIS_URL, the shared-crawl add-on names crawler.frontier.scheduler_redis.RedisFrontierScheduler.
SCHEDULER = "crawler.frontier.scheduler_local.LocalFrontierScheduler"
SCHEDULER_PRIORITY_QUEUE = "crawler.frontier.queue_local.PolitePriorityQueue"
ROBOTSTXT_USER_AGENT = "crawler"
DOWNLOADER_MIDDLEWARES = {
    # Replaces Scrapy's RobotsTxtMiddleware at its place.
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "crawler.middlewares.robots.RobotsMiddleware": 100,
    # Replaces Scrapy's RetryMiddleware at its place: backoff through the frontier.
    "scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
    "crawler.middlewares.retry.BackoffRetryMiddleware": 550,
    # Replaces Scrapy's HttpCompressionMiddleware at its place: no charset sniffing of gzip bytes.
    "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
    "crawler.middlewares.compression.CompressedBodyMiddleware": 590,
    # Under redirects (600): only final answers are judged.
    "crawler.middlewares.filters.ContentTypeFilterMiddleware": 585,
    # Above redirects (600) and retries (550): sees every response as it arrives.
    "crawler.middlewares.limiter.LimiterMiddleware": 800,
    # Before robots.txt (100): a refused address gets no robots.txt fetch, slot or connection.
    "crawler.middlewares.address_guard.AddressGuardMiddleware": 50,
    # After the address guard, before robots.txt: with a proxy, names are checked here (a proxy
    # resolves them itself); before Scrapy's HttpProxyMiddleware (750), which reads the proxy.
    "crawler.middlewares.proxy.ProxyMiddleware": 60,
    # Replace Scrapy's redirect middlewares at their places: targets checked like links.
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
    "crawler.middlewares.redirects.CheckedMetaRefreshMiddleware": 580,
    "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
    "crawler.middlewares.redirects.CheckedRedirectMiddleware": 600,
    # First: a queued page whose URL pattern gave twins meanwhile leaves no trace further on.
    "crawler.middlewares.traps.TrapMiddleware": 40,
    # Under the limiter (800), which settles an unstamped departure first on the way back;
    # above redirects and retries.
    "crawler.middlewares.request_log.RequestLogMiddleware": 790,
    # Above redirects (600), retries (550) and decompression (590): every answer as it came off
    # the wire; after Scrapy's HttpProxyMiddleware (750): the request's headers as sent.
    "crawler.middlewares.warc.WarcMiddleware": 760,
}

SPIDER_MIDDLEWARES = {
    # The spiders refuse URLs longer than URLLENGTH_LIMIT themselves, with a `filtered` row:
    # Scrapy's middleware dropped them without one (and a sitemap's discovery waited for ever).
    "scrapy.spidermiddlewares.urllength.UrlLengthMiddleware": None,
    # A warning for spiders that copy a response's meta into their requests; these build theirs.
    "scrapy.spidermiddlewares.metacopy.MetaCopyDetectionMiddleware": None,
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
CRAWLER_HANDOUT_LEAD_SECONDS = 0.25
CRAWLER_SPACING_MARGIN = 0.02
CRAWLER_CIRCUIT_FAILURES = 5
CRAWLER_CIRCUIT_OPEN_SECONDS = 60.0
CRAWLER_CIRCUIT_CLOSE_SUCCESSES = 2
CRAWLER_RETRY_BACKOFF_CAP = 600.0
CRAWLER_ACCEPT_CONTENT_TYPES = [
    "text/*",
    "application/xhtml+xml",
    "application/xml",
    "application/*+xml",
    "application/json",
]
CRAWLER_REJECT_CONTENT_TYPES: list[str] = []
# Links and sitemap entries with these extensions get a `filtered` row and are never requested.
CRAWLER_IGNORED_EXTENSIONS = IGNORED_EXTENSIONS
CRAWLER_ROBOTS_TTL = 3600.0
CRAWLER_ROBOTS_RETRY_SECONDS = 60.0
CRAWLER_ROBOTS_FAIL_OPEN = False
# Answers that block a domain (and raise its learned delay); the second list only with Retry-After.
CRAWLER_BLOCK_STATUSES = [429]
CRAWLER_BLOCK_STATUSES_WITH_RETRY_AFTER = [503]

# --- Safety: what a crawl may reach, and bounds on what it takes in ------------------------
# Addresses that are not globally routable are refused (seeds' hosts excepted) at connection
# time by the resolver, and for literal addresses by AddressGuardMiddleware before anything.
TWISTED_DNS_RESOLVER = "crawler.guard.resolver.GuardedResolver"
CRAWLER_ALLOWED_NETWORKS: list[str] = []
# An HTTP proxy for every request (http://user:password@host:port); "" for none (the
# http_proxy/https_proxy environment variables still apply, as in Scrapy).
CRAWLER_PROXY = ""
# Hosts (and the hosts under them) CRAWLER_PROXY does not apply to.
CRAWLER_NO_PROXY: list[str] = []
# Only http and https: no file://, s3://, ftp:// or data: reached through a link or redirect.
# The HTTP/1.1 handler also tells the limiter when each request's bytes left: a domain's next
# request counts from then, not from when the frontier or a middleware saw it.
DOWNLOAD_HANDLERS = {
    "http": "crawler.download.handler.GuardedHTTPDownloadHandler",
    "https": "crawler.download.handler.GuardedHTTPDownloadHandler",
    "data": None,
    "file": None,
    "s3": None,
    "ftp": None,
}
CRAWLER_MAX_HEADER_BYTES = 256 * 1024
CRAWLER_MAX_HEADERS = 500
CRAWLER_MAX_IDLE_CONNECTIONS = 256
CRAWLER_MAX_TEXT_CHARS = 500_000
CRAWLER_MAX_LINKS_READ = 10_000
# Scrapy's remote-control extension serves an HTTP endpoint that runs Python in the process:
# off unless an operator turns it on for a run.
REMOTE_CONTROL_ENABLED = False
# Per-domain pacing: {"pattern": {"concurrency": N, "min_delay": S}}; patterns are a host,
# host:port, *.example.com or *. Operators change them at run time (domain_controls).
CRAWLER_DOMAIN_OVERRIDES: dict[str, dict[str, float]] = {}
CRAWLER_ROBOTS_RECORD_ALLOWED = False

# --- HTTP/2 -----------------------------------------------------------------------------------
# https through Scrapy's HTTP/2 handler (only for servers that offer HTTP/2: it does not fall back).
CRAWLER_HTTP2 = False
ADDONS = {
    "crawler.addons.json_lists.JsonLists": -10,  # first: the others read lists as lists
    "crawler.addons.http2.Http2": 0,
    "crawler.addons.switched_off.SwitchedOffComponents": 0,
    "crawler.addons.shared_crawl.SharedCrawl": 0,
}
# State of domains idle this long is evicted (what they learned is kept); 0: never.
CRAWLER_DOMAIN_IDLE_SECONDS = 3600.0

# --- CPU per page ----------------------------------------------------------------------------
# Scrapy starts CONCURRENT_ITEMS (100) asyncio tasks for every callback's output; ours is one
# row and a few requests, none of which waits (the storage pipeline only appends to a batch,
# or holds the crawl back when the database is away, which it should), so one does.
CONCURRENT_ITEMS = 1

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
    "crawler.extensions.log_threshold.LogThreshold": 0,
    "crawler.extensions.run_lock.RunLock": 500,
    "crawler.extensions.heartbeat.Heartbeat": 510,
    "crawler.extensions.control.CrawlControl": 520,
    "crawler.extensions.reactor_heartbeat.ReactorHeartbeat": 0,
    "crawler.extensions.cold_domains.ColdDomains": 530,
}
CRAWLER_GC_FREEZE = True
# Parsing and extraction of documents in worker threads, within a CPU time and a depth budget.
CRAWLER_EXTRACT_THREADS = 1
CRAWLER_EXTRACT_TIMEOUT = 60.0
# A page is read on the reactor first, for at most this long, then in a thread (0: pages of
# more than 64 KiB straight to the thread). Only where the walk is compiled (scripts/compile.sh).
CRAWLER_EXTRACT_INLINE_SECONDS = 0.05
CRAWLER_MAX_DOM_DEPTH = 5000
CRAWLER_MAX_DOM_ATTRIBUTES = 10_000
CRAWLER_MAX_LINKS_PER_PAGE = 1000
CRAWLER_RESPECT_NOFOLLOW = True
CRAWLER_FOLLOW_CANONICAL = True
CRAWLER_SCOPE = "site"
CRAWLER_TRACKING_PARAMS = list(DEFAULT_TRACKING_PARAMS)

# --- Traps and twins ----------------------------------------------------------------------------
# A fetched page whose text's SimHash is within CRAWLER_TWIN_MAX_DISTANCE bits of a page of its
# site fetched before is a `duplicate` row naming its twin; a discovered URL a trap rule refuses
# is a `filtered` row naming the rule (docs/settings.md).
CRAWLER_TWINS_ENABLED = True
CRAWLER_TWIN_MAX_DISTANCE = 5
CRAWLER_TWIN_FOLLOW_LINKS = False
CRAWLER_TWIN_SITE_CAPACITY = 50_000
CRAWLER_TWIN_STORED_PER_SITE = 10_000
CRAWLER_SOFT404_PROBE = True
CRAWLER_TRAP_MAX_SEGMENT_REPEATS = 2
CRAWLER_TRAP_MAX_PATH_SEGMENTS = 30
CRAWLER_TRAP_MAX_QUERY_PARAMS = 20
CRAWLER_TRAP_PATTERN_TWINS = 5
CRAWLER_TRAP_PATTERN_MAX_URLS = 10_000
# Backpressure (seed 002's ingestion controls): a page's new URLs beyond these are `skipped` rows.
CRAWLER_INGEST_RATE_PER_SITE = 100.0
CRAWLER_INGEST_BURST_PER_SITE = 1000
CRAWLER_FRONTIER_MAX_PER_DOMAIN = 100_000

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
# A job whose database cannot be reached at start-up for this long ends (exit status 3).
CRAWLER_STORAGE_CONNECT_TIMEOUT = 30.0
# One run of a crawl at a time (without REDIS_URL): a lock whose holder has not renewed it for
# this long is taken over; 0 turns the lock off.
CRAWLER_RUN_LOCK_SECONDS = 60.0

# --- Re-crawls and retention ------------------------------------------------------------------
# Known pages are requested again only when due (an adaptive interval per page, in seconds),
# with If-None-Match / If-Modified-Since; `scrapy prune` applies the CRAWLER_RETAIN_* settings.
CRAWLER_RECRAWL_MIN_INTERVAL = 3600.0
CRAWLER_RECRAWL_MAX_INTERVAL = 30 * 86400.0
CRAWLER_RECRAWL_INITIAL_INTERVAL = 86400.0
CRAWLER_RECRAWL_CONDITIONAL = True
CRAWLER_RETAIN_ROBOTS_DECISIONS_DAYS = 30.0
CRAWLER_RETAIN_ALLOWED_ROBOTS_DECISIONS = False
CRAWLER_RETAIN_JOBS_DAYS = 90.0
CRAWLER_RETAIN_GONE_VISITS = 3
CRAWLER_RETAIN_BODIES_DAYS = 0.0
CRAWLER_RETAIN_REQUEST_LOG_DAYS = 14.0
CRAWLER_RETAIN_STATS_SAMPLES_DAYS = 14.0
CRAWLER_RETAIN_WORKERS_DAYS = 14.0
CRAWLER_PRUNE_BATCH_SIZE = 50_000

# --- WARC files (ISO 28500) -------------------------------------------------------------------
# A folder turns them on: request, response, revisit and metadata records of every fetch
# (robots.txt included), rotated past CRAWLER_WARC_MAX_SIZE bytes, a CDXJ index beside each.
CRAWLER_WARC_DIR = ""
CRAWLER_WARC_MAX_SIZE = 1_000_000_000

ITEM_PIPELINES = {
    "crawler.pipelines.storage.StoragePipeline": 800,
}

# --- Several processes, one crawl (REDIS_URL) ------------------------------------------------
# Set REDIS_URL and every process started with the same crawl id shares one frontier, one
# limiter state, one robots.txt cache and one seen filter (scrapy-redis, with this project's
# queue class). Unset, everything stays in the process.
REDIS_URL = os.environ.get("REDIS_URL", "")
SCHEDULER_QUEUE_CLASS = "crawler.frontier.queue_redis.RedisFrontierQueue"
CRAWLER_CRAWL_ID = ""
CRAWLER_LEASE_SECONDS = 120.0
CRAWLER_IDLE_CLOSE_SECONDS = 0.0
CRAWLER_REDIS_POLL_SECONDS = 0.25
# A shard that held nothing is asked again after a time that doubles up to this.
CRAWLER_REDIS_EMPTY_POLL_SECONDS = 2.0
CRAWLER_REDIS_TIMEOUT = 5.0
# A worker whose Redis does not answer at its start waits this long for it, then ends (status 10).
CRAWLER_REDIS_CONNECT_TIMEOUT = 30.0
CRAWLER_REDIS_META_KEYS = [
    "depth",
    "discovered_via",
    "referrer",
    "sitemap_lastmod",
    "sitemap_changefreq",
    "sitemap_priority",
    "sitemap_depth",
    "download_maxsize",
    "dont_filter_content_type",
    "dont_obey_robotstxt",
    "not_before",
    "retry_times",
    "redirect_urls",
    "redirect_reasons",
    "redirect_times",
    "redirect_ttl",
    "handle_httpstatus_all",
    "handle_httpstatus_list",
    "dont_retry",
    "dont_redirect",
    "recrawl",
]
CRAWLER_REDIS_LOCAL_META_KEYS = ["discovery", "soft_404_probe"]
CRAWLER_SEEN_FILTER = "exact"
CRAWLER_BLOOM_CAPACITY = 10_000_000
CRAWLER_BLOOM_ERROR_RATE = 1e-6
# Redis off the reactor: leased requests popped ahead, retries of a Redis outage, whether
# REDIS_URL names a node of a Redis Cluster (auto: asked), the frontier's shards, the delivery
# cap, the time a worker waits for Redis at its end, dead crawls reclaimed.
CRAWLER_REDIS_PREFETCH = 4
CRAWLER_REDIS_RETRY_SECONDS = 1.0
CRAWLER_REDIS_CLUSTER = "auto"
CRAWLER_REDIS_SHARDS = 16
CRAWLER_REDIS_CLOSE_TIMEOUT = 10.0
CRAWLER_MAX_DELIVERIES = 5
CRAWLER_CRAWL_REAP_SECONDS = 600.0
# Cold domains in PostgreSQL (a shared crawl on PostgreSQL only): a domain queuing more than
# ABOVE requests whose requests beyond KEEP may not go for COLD seconds (its next slot that far,
# or KEEP requests at its delay take that long: a big site's queue) keeps KEEP in Redis and moves
# the rest to the frontier_spill table, refilled when fewer than KEEP/2 remain; each worker
# moves every SECONDS. 500/200: a few hundred requests per domain keep hours of a slow domain's
# work in Redis (200 at one a minute), and Redis holds at most 500 per domain, ~80 KB, whatever
# the crawl discovered. 30 s: longer than the 10 s a slot is held until its request leaves, so a
# domain does not spill for a held slot alone; ABOVE 0: off.
CRAWLER_SPILL_ABOVE = 500
CRAWLER_SPILL_KEEP = 200
CRAWLER_SPILL_COLD_SECONDS = 30.0
CRAWLER_SPILL_SECONDS = 5.0
# A log line (and the reactor's lag) every N seconds; 0: off.
CRAWLER_REACTOR_HEARTBEAT_SECONDS = 0.0

# --- Seeing and steering a running crawl (workers, domain_state, request_log, domain_controls) ---
CRAWLER_HEARTBEAT_SECONDS = 5.0
CRAWLER_DOMAIN_STATE = True
CRAWLER_REQUEST_LOG = True
CRAWLER_DEPARTURE_LOG = ""
CRAWLER_CONTROL_POLL_SECONDS = 2.0
CRAWLER_INBOX = True
# --- scrapy serve: the API, dashboard and metrics ---------------------------------------------
CRAWLER_API_BIND = "127.0.0.1:8700"
CRAWLER_API_SESSION_SECONDS = 24 * 3600.0
CRAWLER_API_COOKIE_SECURE = False
# Requests per CRAWLER_API_RATE_WINDOW seconds, per client (IP for anonymous, else user); seed
# injection counts on top of the caller's tier.
CRAWLER_API_RATE_LIMITS = {"anonymous": 10, "user": 100, "admin": 500, "seed": 10}
CRAWLER_API_RATE_WINDOW = 60.0
# Failed logins per account within the window before its logins answer 429 (per serve process).
CRAWLER_API_LOGIN_FAILURES = 10
CRAWLER_API_LOGIN_FAILURE_WINDOW = 900.0
# Networks of reverse proxies whose X-Forwarded-For (-Proto, -Host) is believed.
CRAWLER_API_TRUSTED_PROXIES = []
CRAWLER_API_HEARTBEAT_TIMEOUT = 120.0
# Per-domain series of /metrics (domain names as labels, to anyone who reaches /metrics): none
# unless the operator asks.
CRAWLER_API_METRICS_TOP_DOMAINS = 0
# A bearer token (or a file holding it) with which a scraper reads /metrics outside the rate
# limits, and sees the crawls' names; "" for none.
CRAWLER_API_METRICS_TOKEN = ""
CRAWLER_API_METRICS_TOKEN_FILE = ""

# --- Runtime -----------------------------------------------------------------------------------
LOGSTATS_INTERVAL = 10.0
FEED_EXPORT_ENCODING = "utf-8"
TELNETCONSOLE_ENABLED = False
# What a cron job or scrapyd keeps: progress, pacing changes and the summary, not every request;
# items are logged by URL and status only (at DEBUG), never whole.
LOG_LEVEL = "INFO"
LOG_FORMATTER = "crawler.logformatter.BriefLogFormatter"
# Scrapy's memory stats without a deprecation check on every read of them.
STATS_CLASS = "crawler.compat.PlainMemoryStatsCollector"

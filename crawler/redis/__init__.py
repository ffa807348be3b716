"""The crawl's Redis, for crawls shared by several processes (``REDIS_URL``): the connection and
the key prefix of a crawl, the I/O thread every command goes through, the script through which
every process changes the crawl's state (queues, slots, leases, seen marks), and the reaper of
crawls whose workers all died. The concepts built on it (the frontier's queue, the limiter, the
robots.txt cache, the seen filters, the scope) each keep their Redis module beside their local one."""

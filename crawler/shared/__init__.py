"""What the processes of one crawl share through Redis (``REDIS_URL``): the frontier with its
leases, the domain limiter's state, the robots.txt cache and the seen-URL filter."""

"""Which discovered URLs a crawl follows: the seeds' hosts or sites, kept in the process, or in
Redis for every process of a shared crawl."""

"""Seeing and steering a running crawl: what crawl processes report about themselves (workers,
stats samples, domain state, the request log) and what they take from operators (domain
controls, URLs in the inbox, a job's cancel flag), through the crawl's storage backend."""

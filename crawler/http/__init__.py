"""What HTTP messages say, read one way everywhere: response headers (media types, dates,
``Retry-After``), binary bodies served as text, the content a crawl keeps, bounds on header
sections, and which download failures may pass if tried again."""

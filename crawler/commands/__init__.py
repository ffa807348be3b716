"""``scrapy`` commands of the project (``COMMANDS_MODULE``).

Scrapy imports every command's module at every start, ``scrapy crawl`` included: what only one
command uses (Redis, the API) is imported in its ``run``."""

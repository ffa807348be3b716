"""``scrapy`` commands of the project (``COMMANDS_MODULE``)."""

"""Signals of the crawler's own, sent through the crawler's signal manager as Scrapy's are."""

domain_blocked = object()
"""A domain answered 429 (or another blocking status): ``domain``, ``outcome`` (a policy ``Outcome``)."""

rows_committed = object()
"""Sent with ``urls``, the URLs of page rows now stored (in the database, or in the file of
unsaved rows when the database stayed away): their requests are done for good."""

request_not_sent = object()
"""Sent with ``request``, a request that had its domain's slot and was not sent: its job ended
first (``crawler.exceptions.NotSent``)."""

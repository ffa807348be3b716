"""A local test web: generated sites on several loopback IPs, with a server-side request log.

Used by the tests and by ``bench/``. Start it with ``TestWeb(profiles).start()``; each profile
gets its own 127.0.0.x address, which Scrapy treats as a distinct host.
"""

from tests.testweb.control import TestWeb

__all__ = ["TestWeb"]

"""What a robots.txt fetch means when it brings no file to parse (RFC 9309 §2.3.1)."""

from __future__ import annotations

from scrapy.exceptions import CannotResolveHostError, DownloadConnectionRefusedError, DownloadTimeoutError

from crawler.http.failures import describe
from crawler.robots.rules import RobotsRules


def no_answer(exc: BaseException) -> str:
    """Why a robots.txt fetch got no answer, for the rows of the site's pages."""
    if isinstance(exc, DownloadConnectionRefusedError):
        cause = "connection refused"
    elif isinstance(exc, CannotResolveHostError):
        cause = "DNS lookup failed"
    elif isinstance(exc, DownloadTimeoutError):
        cause = "timed out"
    else:
        cause = describe(exc) or str(exc) or type(exc).__name__
    return f"{cause} while fetching robots.txt"


def rules_for_status(status: int, user_agent: str, *, fail_open: bool = False) -> RobotsRules | None:
    """Rules implied by a non-2xx status; None for 2xx (parse the body instead).

    4xx: the file is unavailable, everything is allowed. 429, 5xx, and redirects followed past
    the limit: unreachable, nothing is allowed for now and the fetch is retried later, unless
    ``fail_open``.
    """
    if 200 <= status < 300:
        return None
    # 429 asks us to come back later, as Google reads it: the file is not "unavailable".
    if 400 <= status < 500 and status != 429:
        return RobotsRules.allowing_all(user_agent, f"robots.txt HTTP {status}: allow all")
    return unreachable(user_agent, f"robots.txt HTTP {status}", fail_open=fail_open)


def unreachable(user_agent: str, cause: str, *, fail_open: bool = False) -> RobotsRules:
    if fail_open:
        return RobotsRules.allowing_all(user_agent, f"{cause}: allow all (fail open)")
    return RobotsRules.disallowing_all(user_agent, f"{cause}: disallow all until it can be fetched")

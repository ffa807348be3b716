"""What kind of failure a download exception is: one that may pass if tried again (a timeout, a
refused or reset connection), or a final one (a reply that is not HTTP, a TLS error, headers
past their limits), which no retry can change; and how to say it in a row."""

from __future__ import annotations

from collections.abc import Iterator

from OpenSSL.SSL import Error as TLSError
from scrapy.exceptions import DownloadCancelledError, IgnoreRequest
from twisted.python.failure import Failure
from twisted.web.client import ResponseFailed

from crawler.compat import BadHeaders, ParseError, ResponseNeverReceived
from crawler.http.header_limits import HeadersTooLarge

_PROTOCOL_ERRORS = (ParseError, BadHeaders, HeadersTooLarge)


def causes(exception: BaseException) -> Iterator[BaseException]:
    """The exception, what caused it, and the reasons a Twisted ``ResponseFailed`` carries."""
    seen: set[int] = set()
    pending = [exception]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if current.__cause__ is not None:
            pending.append(current.__cause__)
        if isinstance(current, ResponseFailed):
            pending.extend(r.value for r in current.reasons if isinstance(r, Failure) and r.value is not None)


def is_final(exception: BaseException) -> bool:
    """A protocol or TLS error: retrying cannot help."""
    return any(isinstance(cause, (*_PROTOCOL_ERRORS, TLSError)) for cause in causes(exception))


def is_site_failure(exception: BaseException) -> bool:
    """The site did not answer (transport error, timeout, protocol or TLS error): what the job
    failure threshold counts. A request dropped on purpose (``IgnoreRequest``) or a download
    cancelled past the size limit is not."""
    return not isinstance(exception, (IgnoreRequest, DownloadCancelledError))


def describe(exception: BaseException) -> str | None:
    """A protocol, TLS or transport error said plainly (not as a list of Twisted failures), or
    None for the others."""
    found = list(causes(exception))
    for cause in found:
        if isinstance(cause, TLSError):
            details = [
                part
                for entry in (cause.args[0] if cause.args and isinstance(cause.args[0], list) else [])
                for part in entry[-1:]
            ]
            return f"TLS error: {', '.join(map(str, details)) or cause}"
        if isinstance(cause, HeadersTooLarge):
            return str(cause)
        if isinstance(cause, _PROTOCOL_ERRORS):
            return f"not an HTTP response: {type(cause).__name__}: {' '.join(map(str, cause.args))}".rstrip(": ")
    for cause in found:
        if isinstance(cause, ResponseFailed):
            what = "no response" if isinstance(cause, ResponseNeverReceived) else "response cut off"
            reasons = "; ".join(f"{type(r.value).__name__}: {r.value}" for r in cause.reasons if isinstance(r, Failure))
            return f"{what}: {reasons}"
    return None

"""The test web's server process: ``python -m tests.testweb.server --port P --site IP=NAME[:k=v,…] …``.

Every request is logged server-side with its start (when its bytes reached the machine, by the
kernel's clock: ``tests.testweb.arrival``) and end times, host, path and status;
``GET /__testweb__/log`` returns the log as JSON and ``GET /__testweb__/clear`` empties it and
resets the sites' rate limits (neither is logged). A reply with an ``ETag`` is answered 304 to a
request whose ``If-None-Match`` names it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from twisted.internet import reactor  # noqa: TID253 - the test web runs in a process of its own
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET, Request, Site

from tests.testweb.arrival import TimestampedPort, received_at
from tests.testweb.pages import NOT_FOUND, Reply
from tests.testweb.sites import SITES
from tests.testweb.sites import Site as GeneratedSite

CONTROL = "/__testweb__/"


class Router(Resource):
    isLeaf = True

    def __init__(self, sites: dict[str, GeneratedSite]):
        super().__init__()
        self.sites = sites
        self.log: list[dict[str, Any]] = []
        self.accepted: dict[int, float] = {}  # site -> start of the last request it accepted
        self.first_seen: dict[int, float] = {}  # site -> start of its first request

    def render(self, request: Request) -> bytes | int:
        path = request.uri.decode("latin-1")
        if path.startswith(CONTROL):
            return self._control(path, request)
        address = request.getHost()
        host = f"{address.host}:{address.port}"
        start = received_at(request.transport)
        entry = {"host": host, "path": path, "method": request.method.decode(), "start": start}
        site = self.sites.get(address.host)
        reply = self._over_rate(site, entry["start"]) if site else None
        if reply is None:
            reply = site.reply(path, f"http://{host}") if site else NOT_FOUND
        reply = _conditional(reply, request)

        def finished(_: object) -> None:
            entry["end"] = time.time()
            entry.setdefault("status", 0)  # 0: the client went away before the answer
            self.log.append(entry)

        def respond() -> None:
            if "end" in entry:  # the connection was lost while the answer was delayed
                return
            entry["status"] = reply.status
            request.setResponseCode(reply.status)
            for name, value in reply.headers.items():
                request.setHeader(name, value)
            if request.method != b"HEAD":
                request.write(reply.body)
            request.finish()

        request.notifyFinish().addBoth(finished)
        if site is not None and site.latency and reply.status != 429:  # refusals are quick
            reactor.callLater(site.latency, respond)
        else:
            respond()
        return NOT_DONE_YET

    def _over_rate(self, site: GeneratedSite, now: float) -> Reply | None:
        """A 429 when requests come faster than the site's hidden rate limit, or in the site's
        window of refusing everything (``refuse=A-B``, seconds after its first request)."""
        first = self.first_seen.setdefault(id(site), now)
        window = site.options.get("refuse")
        if window:
            start, end = (float(x) for x in window.split("-"))
            if start <= now - first < end:
                return Reply(429, b"busy", {"Retry-After": site.options.get("retry_after", "1")})
        if site.rate is None:
            return None
        last = self.accepted.get(id(site))
        if last is not None and now - last < 1 / site.rate:
            retry_after = site.options.get("retry_after")
            return Reply(429, b"slow down", {"Retry-After": retry_after} if retry_after else {})
        self.accepted[id(site)] = now
        return None

    def _control(self, path: str, request: Request) -> bytes:
        request.setHeader("Content-Type", "application/json")
        if path.startswith(CONTROL + "clear"):  # a fresh start: the log and the sites' limits
            self.log.clear()
            self.accepted.clear()
            self.first_seen.clear()
            return b"{}"
        return json.dumps(self.log).encode()


def _conditional(reply: Reply, request: Request) -> Reply:
    """304 Not Modified when the client already has the version a reply's ETag names."""
    etag = reply.headers.get("ETag")
    asked = (request.getHeader("If-None-Match") or "").split(",")
    if reply.status == 200 and etag and etag in (tag.strip() for tag in asked):
        return Reply(304, b"", {"ETag": etag})
    return reply


def parse_site(spec: str) -> tuple[str, GeneratedSite]:
    address, _, profile = spec.partition("=")
    name, _, options = profile.partition(":")
    values = dict(pair.split("=", 1) for pair in options.split(",") if pair) if options else {}
    return address, SITES[name](values)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--site", action="append", default=[], help="IP=NAME[:key=value,…]")
    args = parser.parse_args(argv)
    sites = dict(parse_site(spec) for spec in args.site)
    factory = Site(Router(sites))
    factory.noisy = False
    factory.log = lambda request: None  # the Router keeps its own log
    for address in sites:
        TimestampedPort(args.port, factory, backlog=1024, interface=address, reactor=reactor).startListening()
    print("READY", flush=True)
    sys.stdout.flush()
    reactor.run()


if __name__ == "__main__":
    main()

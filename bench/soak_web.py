"""The soak's web: nginx serving the documentation corpus (``bench.realweb``) on many loopback
hosts, a few of them hard to crawl, and two faults it can turn on and off while it serves (by
rewriting its configuration and reloading it, SIGHUP to its own PID).

Hosts by role, in address order: ``crawl_delay`` (robots.txt says ``Crawl-delay: 2``),
``limited_429`` and ``limited_503`` (a hidden limit of 40 requests a minute, one at a time; past
it, a 429 or a 503 with ``Retry-After: 5``), ``slow`` (50 KB/s), ``outage`` (goes down: its
address stops listening, connections are refused), ``trickle`` (slowed to 1 byte a second on
demand), then plain hosts. The access log has every request's start as nginx read it, its end,
status, and whether the response was sent whole.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from dataclasses import dataclass

from bench.realweb import LOG_FORMAT, RealWeb, ServedRequest, parse_log_line
from tests.helpers import wait_until

CRAWL_DELAY = 2.0
DEFAULT_DELAY = 1.0
"""The crawler's delay where robots.txt gives none (``CRAWLER_DEFAULT_DELAY``)."""
RETRY_AFTER = 5
HIDDEN_RATE = "40r/m"
SLOW_RATE = "50k"
COMPLETION = "\\t$request_completion"
"""Appended to the log's format: ``OK`` when the response was sent whole."""
ROLES = {"crawl_delay": 3, "limited_429": 2, "limited_503": 2, "slow": 2, "outage": 1, "trickle": 1}


@dataclass(frozen=True, slots=True)
class SoakRequest:
    served: ServedRequest
    complete: bool
    """nginx sent the whole response (a client that gave up leaves it incomplete)."""


def parse_soak_line(line: str) -> SoakRequest:
    served, _, completion = line.rstrip("\n").rpartition("\t")
    return SoakRequest(parse_log_line(served), completion == "OK")


class SoakWeb(RealWeb):
    def __init__(self, hosts: int) -> None:
        if hosts < sum(ROLES.values()) + 1:
            raise ValueError(f"at least {sum(ROLES.values()) + 1} hosts")
        super().__init__(hosts, crawl_delay=None)
        addresses = iter(self.addresses)
        self.roles = {role: [next(addresses) for _ in range(count)] for role, count in ROLES.items()}
        self.roles["plain"] = list(addresses)
        self.delays = {address: CRAWL_DELAY for address in self.roles["crawl_delay"]}
        self.is_down = False
        self.is_trickling = False

    def delay(self, address: str) -> float:
        """The least time between two requests to ``address`` that the crawler may leave."""
        return self.delays.get(address, DEFAULT_DELAY)

    def set_down(self, down: bool) -> None:
        """The outage host stops (or starts again) listening."""
        self.is_down = down
        self._reload()
        (address,) = self.roles["outage"]
        wait_until(lambda: _accepts(address, self.port) != down, 15, f"nginx: {address} {'down' if down else 'up'}")

    def set_trickle(self, trickle: bool) -> None:
        """The trickle host's answers slowed to 1 byte a second (or back to full speed)."""
        self.is_trickling = trickle
        self._reload()

    def read_from(self, offset: int) -> tuple[list[SoakRequest], int]:
        """Requests logged from byte ``offset`` on (whole lines only), and the offset after them."""
        with self.access_log.open("rb") as log:
            log.seek(offset)
            data = log.read()
        whole = data[: data.rfind(b"\n") + 1]
        lines = whole.decode().splitlines()
        return [parse_soak_line(line) for line in lines if line.strip()], offset + len(whole)

    def _reload(self) -> None:
        assert self.folder is not None and self._process is not None
        (self.folder / "nginx.conf").write_text(self._config())
        os.kill(self._process.pid, signal.SIGHUP)  # nginx's master re-reads it; old workers finish
        time.sleep(0.5)

    def _config(self) -> str:
        listening = [a for a in self.addresses if not (self.is_down and a in self.roles["outage"])]
        listens = "\n".join(f"    listen {address}:{self.port};" for address in listening)
        limited = self.roles["limited_429"] + self.roles["limited_503"]
        rates = {a: SLOW_RATE for a in self.roles["slow"]}
        if self.is_trickling:
            rates |= {a: "1" for a in self.roles["trickle"]}
        maps = "\n".join(
            (
                _map("$limit_key", {a: "$server_addr" for a in limited}),
                _map("$answers_503", dict.fromkeys(self.roles["limited_503"], "1")),
                _map("$crawl_delay_line", {a: f"Crawl-delay: {d:g}\\n" for a, d in self.delays.items()}),
                _map("$rate", rates, default="0"),
            )
        )
        head = self.http_head(LOG_FORMAT + COMPLETION)
        return f"""
{head}
{maps}
  # A request with an empty key is not counted: only the limited hosts have a limit.
  limit_req_zone $limit_key zone=hidden:1m rate={HIDDEN_RATE};
  server {{
{listens}
    root {self.root};
    limit_rate $rate;
    location = / {{ return 302 /index.html; }}
    location = /robots.txt {{
      default_type text/plain;
      return 200 "User-agent: *\\n${{crawl_delay_line}}";
    }}
    location / {{
      limit_req zone=hidden;
      limit_req_status 429;
      error_page 429 = @limited;
    }}
    location @limited {{
      add_header Retry-After {RETRY_AFTER} always;
      if ($answers_503) {{ return 503 "busy\\n"; }}
      return 429 "too many requests\\n";
    }}
  }}
}}
"""


def _map(target: str, values: dict[str, str], default: str = "") -> str:
    """An nginx ``map`` of the server address to ``target``."""
    lines = "".join(f'    {key} "{value}";\n' for key, value in values.items())
    return f'  map $server_addr {target} {{\n    default "{default}";\n{lines}  }}'


def _accepts(address: str, port: int) -> bool:
    try:
        socket.create_connection((address, port), timeout=1).close()
    except OSError:
        return False
    return True

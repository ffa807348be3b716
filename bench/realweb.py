"""A real web on loopback for benchmarks: nginx serving a Debian documentation package
gzip-compressed, as real servers serve it, on as many loopback hosts as asked.

    .venv/bin/python -m bench.realweb serve [--hosts 3] [--crawl-delay 1] [--delay 127.20.0.2=0.5]
    .venv/bin/python -m bench.realweb report ACCESS_LOG [--delay 1]
    .venv/bin/python -m bench.realweb hog [--processes 1]

The corpus is the Python 3.11 documentation of Debian (``python3.11-doc``): 530 HTML pages of
9 KB to 2.5 MB, linked to each other and to their text sources. Every loopback address
(127.20.0.1, 127.20.0.2, …) is a host of its own serving the whole corpus, with its own
``robots.txt`` (``Crawl-delay`` per host) and ``sitemap.xml``. HTML is sent gzip-compressed
(precompressed files, ``gzip_static``) with ``Content-Type: text/html`` and no charset, the
common case on the web. nginx runs from a temporary prefix of its own on a free port, bound to
loopback addresses only, and is stopped by its PID. Its access log is the evidence: the start of
every request as the server saw it (``$msec - $request_time``), its end, status and bytes sent,
per host. nginx and the corpus are installed with apt-get where missing.
"""

from __future__ import annotations

import argparse
import ctypes
import gzip
import ipaddress
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

CORPUS_PACKAGE = "python3.11-doc"
CORPUS_SOURCE = Path("/usr/share/doc/python3.11/html")
NGINX_PACKAGE = "nginx-light"
CORPUS_CACHE = Path("/var/tmp/crawler-realweb") / CORPUS_PACKAGE  # outside /root: nginx's workers read it
FIRST_ADDRESS = "127.20.0.1"  # clear of the test web's 127.0.0.x hosts
# Tab-separated so that no field needs quoting; $request_uri is the raw target, without spaces.
LOG_FORMAT = "$msec\\t$request_time\\t$server_addr\\t$remote_addr\\t$status\\t$bytes_sent\\t$request_method\\t$request_uri\\t$server_protocol"


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)


def ensure_installed(corpus: bool = True) -> None:
    """Install nginx and (unless ``corpus`` is false) the corpus package with apt-get where
    they are missing."""
    wanted = [(NGINX_PACKAGE, nginx_binary()), (CORPUS_PACKAGE, CORPUS_SOURCE.is_dir() or not corpus)]
    missing = [name for name, present in wanted if not present]
    if not missing:
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise SystemExit(f"MISSING: {', '.join(missing)} (install them with apt-get as root)")
    print(f"Installing {', '.join(missing)} with apt-get", file=sys.stderr, flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", "DPkg::Lock::Timeout=300"]
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", *lock, *missing], check=True, env=env, stdout=subprocess.DEVNULL)


def prepared_corpus(cache: Path = CORPUS_CACHE, source: Path = CORPUS_SOURCE) -> Path:
    """The corpus copied once into ``cache`` with a ``.gz`` beside every HTML page (for
    ``gzip_static``); later calls reuse it. Readable by nginx's unprivileged workers."""
    if (cache / "pages.txt").is_file():
        return cache
    ensure_installed()
    cache.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f"{cache.name}.", dir=cache.parent))
    shutil.copytree(source, building / "corpus", symlinks=False, ignore_dangling_symlinks=True)
    pages = []
    for page in sorted((building / "corpus").rglob("*.html")):
        Path(f"{page}.gz").write_bytes(gzip.compress(page.read_bytes(), compresslevel=6, mtime=0))
        pages.append("/" + page.relative_to(building / "corpus").as_posix())
    (building / "pages.txt").write_text("\n".join(pages) + "\n")
    building.chmod(0o755)
    try:
        building.rename(cache)
    except OSError:  # another process finished first
        shutil.rmtree(building)
    return cache


def corpus_pages(cache: Path = CORPUS_CACHE) -> list[str]:
    """The HTML pages of the corpus, ``/``-rooted and sorted."""
    return (prepared_corpus(cache) / "pages.txt").read_text().split()


def loopback_addresses(count: int, first: str = FIRST_ADDRESS) -> list[str]:
    """``count`` loopback addresses from ``first`` on, skipping those ending in .0 or .255."""
    addresses: list[str] = []
    address = ipaddress.IPv4Address(first)
    while len(addresses) < count:
        if address not in ipaddress.IPv4Network("127.0.0.0/8"):
            raise ValueError(f"not enough loopback addresses after {first}")
        if str(address).rsplit(".", 1)[1] not in ("0", "255"):
            addresses.append(str(address))
        address += 1
    return addresses


def free_port(address: str) -> int:
    with socket.socket() as probe:
        probe.bind((address, 0))
        return probe.getsockname()[1]


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A throwaway certificate and key for TLS on loopback (made with the openssl command)."""
    certificate, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-keyout",
            str(key),
            "-out",
            str(certificate),
        ],
        check=True,
        capture_output=True,
    )
    return certificate, key


@dataclass(frozen=True, slots=True)
class ServedRequest:
    """One line of the access log: a request as the server saw it."""

    host: str  # the server address, i.e. the site
    client: str
    start: float  # when its first byte arrived
    end: float  # when the response was sent
    status: int
    bytes_sent: int
    method: str
    path: str
    protocol: str


def parse_log_line(line: str) -> ServedRequest:
    msec, request_time, host, client, status, sent, method, path, protocol = line.rstrip("\n").split("\t")
    end = float(msec)
    return ServedRequest(host, client, end - float(request_time), end, int(status), int(sent), method, path, protocol)


def read_log(path: Path) -> list[ServedRequest]:
    with path.open() as lines:
        return [parse_log_line(line) for line in lines if line.strip()]


def by_host(requests: Iterable[ServedRequest]) -> dict[str, list[ServedRequest]]:
    """Requests per host, each list in order of start."""
    hosts: dict[str, list[ServedRequest]] = defaultdict(list)
    for request in requests:
        hosts[request.host].append(request)
    return {host: sorted(entries, key=lambda r: r.start) for host, entries in hosts.items()}


def gaps(requests: list[ServedRequest]) -> list[float]:
    """Time between consecutive starts of one host's requests (sorted by start)."""
    return [b.start - a.start for a, b in zip(requests, requests[1:])]


def short_gaps(requests: list[ServedRequest], delay: float, tolerance: float = 0.010) -> list[float]:
    """Gaps shorter than the delay minus the tolerance (the log has millisecond resolution)."""
    return [gap for gap in gaps(requests) if gap < delay - tolerance]


def max_in_flight(requests: Iterable[ServedRequest]) -> int:
    """The most requests of one host being served at the same time."""
    events = sorted(e for r in requests for e in ((r.start, 1), (r.end, -1)))
    most = current = 0
    for _, change in events:
        current += change
        most = max(most, current)
    return most


class RealWeb:
    """nginx serving the corpus on ``hosts`` loopback addresses; a context manager.

    ``crawl_delay`` is every host's ``Crawl-delay`` (None: no such line), ``delays`` overrides it
    per address. ``robots`` False: no host has a robots.txt (404). ``https`` serves TLS with a
    self-signed certificate and offers HTTP/2 (ALPN).
    ``site`` serves that folder instead of the documentation corpus (tests: a small site).
    """

    def __init__(
        self,
        hosts: int = 1,
        *,
        crawl_delay: float | None = 1.0,
        delays: dict[str, float] | None = None,
        robots: bool = True,
        https: bool = False,
        first_address: str = FIRST_ADDRESS,
        workers: int = 1,
        site: Path | None = None,
    ) -> None:
        self.addresses = loopback_addresses(hosts, first_address)
        self.crawl_delay = crawl_delay
        self.delays = dict(delays or {})
        self.robots = robots
        self.https = https
        self.workers = workers
        self.port = 0
        self.pages: list[str] = []
        self.site = site
        self.root = site or CORPUS_CACHE / "corpus"
        self.folder: Path | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def scheme(self) -> str:
        return "https" if self.https else "http"

    @property
    def access_log(self) -> Path:
        assert self.folder is not None, "not started"
        return self.folder / "access.log"

    def base(self, host: int | str = 0) -> str:
        address = self.addresses[host] if isinstance(host, int) else host
        return f"{self.scheme}://{address}:{self.port}"

    def url(self, host: int | str = 0, path: str = "/index.html") -> str:
        return self.base(host) + path

    def delay_of(self, address: str) -> float | None:
        return self.delays.get(address, self.crawl_delay)

    def start(self) -> RealWeb:
        ensure_installed(corpus=self.site is None)
        self._tmp = tempfile.TemporaryDirectory(prefix="realweb-")
        self.folder = Path(self._tmp.name)
        self.folder.chmod(0o755)  # nginx workers run as an unprivileged user when started by root
        if self.site is None:
            self.root = prepared_corpus() / "corpus"
            self.pages = corpus_pages()
        else:  # copied where nginx's unprivileged workers can read it
            self.root = self.folder / "site"
            shutil.copytree(self.site, self.root)
            self.root.chmod(0o755)
            self.pages = sorted("/" + page.relative_to(self.root).as_posix() for page in self.root.rglob("*.html"))
        (self.folder / "sitemap.xml").write_text(_sitemap(self.pages))
        for name in ("logs", "temp"):
            (self.folder / name).mkdir()
        self.port = free_port(self.addresses[0])
        config = self.folder / "nginx.conf"
        config.write_text(self._config())
        binary = nginx_binary()
        assert binary is not None
        self._process = subprocess.Popen(
            [binary, "-p", str(self.folder), "-c", str(config), "-e", str(self.folder / "error.log")],
            preexec_fn=partial(_prepare_nginx, os.getpid()),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self._wait_until_serving()
        return self

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGQUIT)  # graceful: the master waits for its workers
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process is not None and process.stderr is not None:
            process.stderr.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = self.folder = None

    def __enter__(self) -> RealWeb:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    def log(self) -> list[ServedRequest]:
        return read_log(self.access_log)

    def requests_by_host(self) -> dict[str, list[ServedRequest]]:
        return by_host(self.log())

    def clear(self) -> None:
        """Forget the requests logged so far (nginx appends, so truncating is enough)."""
        os.truncate(self.access_log, 0)

    def _wait_until_serving(self, timeout: float = 30.0) -> None:
        assert self._process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                error = self._process.stderr.read().decode() if self._process.stderr else ""
                raise RuntimeError(f"nginx did not start: {error.strip()}")
            try:
                socket.create_connection((self.addresses[-1], self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"nginx is not answering on {self.addresses[-1]}:{self.port}")

    def http_head(self, log_format: str) -> str:
        """nginx's configuration up to the http block's own maps and servers (left open): its
        processes, the access log in ``log_format``, how it sends and compresses."""
        assert self.folder is not None
        folder = self.folder
        temp = folder / "temp"
        open_files = _open_files_allowed()
        return f"""worker_processes {self.workers};
daemon off;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
worker_rlimit_nofile {open_files};
events {{ worker_connections {open_files - _FILES_IN_USE}; }}
http {{
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  log_format realweb "{log_format}";
  access_log {folder}/access.log realweb;
  client_body_temp_path {temp}/body; proxy_temp_path {temp}/proxy; fastcgi_temp_path {temp}/fastcgi;
  uwsgi_temp_path {temp}/uwsgi; scgi_temp_path {temp}/scgi;
  sendfile on;
  tcp_nopush on;
  # Short, as many servers keep an idle connection: here one nginx plays every host, and each
  # host's idle connection holds a slot of the same worker (65 s filled the 16,384 slots of a
  # 10,000-host crawl, and nginx refused connections).
  keepalive_timeout 15;
  keepalive_requests 100000;
  server_tokens off;
  gzip on;
  gzip_static on;
  gzip_vary on;
  gzip_types text/plain text/css text/xml application/xml application/javascript application/json;"""

    def _config(self) -> str:
        assert self.folder is not None
        folder = self.folder
        tls = ""
        listen_options = ""
        if self.https:
            certificate, key = self_signed_certificate(folder)
            tls = f"ssl_certificate {certificate}; ssl_certificate_key {key}; ssl_protocols TLSv1.2 TLSv1.3;"
            listen_options = " ssl http2"
        listens = "\n".join(f"    listen {address}:{self.port}{listen_options};" for address in self.addresses)
        delay_lines = "\n".join(
            f'    {address} "{_crawl_delay_line(self.delay_of(address))}";'
            for address in self.addresses
            if address in self.delays
        )
        robots = (
            '      default_type text/plain;\n      return 200 "User-agent: *\\n${crawl_delay_line}Sitemap: '
            '$scheme://$http_host/sitemap.xml\\n";'
            if self.robots
            else "      return 404;"
        )
        return f"""
{self.http_head(LOG_FORMAT)}
  {tls}
  map $server_addr $crawl_delay_line {{
    default "{_crawl_delay_line(self.crawl_delay)}";
{delay_lines}
  }}
  server {{
{listens}
    root {self.root};
    location = / {{ return 302 /index.html; }}
    location = /robots.txt {{
{robots}
    }}
    location = /sitemap.xml {{
      root {folder};
      sub_filter "https://realweb.invalid/" "$scheme://$http_host/";
      sub_filter_once off;
      sub_filter_types text/xml;
    }}
  }}
}}
"""


def _crawl_delay_line(delay: float | None) -> str:
    return "" if delay is None else f"Crawl-delay: {delay:g}\\n"


def _sitemap(pages: list[str]) -> str:
    entries = "".join(f"<url><loc>https://realweb.invalid{page}</loc></url>\n" for page in pages)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{entries}</urlset>\n'


def exit_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit, so that nginx, hogs and crawls started here are stopped
    on the way out (``kill PID`` of a benchmark leaves nothing behind)."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


_FILES_IN_USE = 1000
"""Open files nginx keeps beside its connections (the pages it sends, its logs)."""


def _open_files_allowed() -> int:
    """As many open files as this process may have (nginx cannot raise its own limit where it
    runs without the privilege to: it opens one socket per host address and one per connection)."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return hard if hard != resource.RLIM_INFINITY else 65536


PR_SET_PDEATHSIG = 1
"""prctl(2)'s option: the signal a process gets when the thread that started it ends (Linux)."""
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None
"""Loaded here, not in the child: loading a library between fork and exec can deadlock."""


def _prepare_nginx(parent: int) -> None:
    """Lift nginx's soft limit on open files to the hard one, and have it stopped when the
    thread that started it (in process ``parent``) ends, however it ends (SIGKILL, or SIGTERM
    without ``exit_on_sigterm``)."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if _LIBC is not None:
        if _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent:  # it ended before the signal was asked for
            os._exit(1)


class CpuHog:
    """Processes that spin on a core each, for runs on a loaded machine; stopped by PID."""

    def __init__(self, processes: int = 1) -> None:
        self.processes = processes
        self._running: list[subprocess.Popen[bytes]] = []

    def start(self) -> CpuHog:
        for _ in range(self.processes):
            self._running.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        return self

    def stop(self) -> None:
        running, self._running = self._running, []
        for process in running:
            process.kill()
        for process in running:
            process.wait()

    @property
    def pids(self) -> list[int]:
        return [process.pid for process in self._running]

    def __enter__(self) -> CpuHog:
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()


def summarize(requests: list[ServedRequest], delay: float | None) -> dict[str, Any]:
    """Figures of one host's requests: count, statuses, gaps (shortest, short ones), in flight."""
    host_gaps = gaps(requests)
    return {
        "requests": len(requests),
        "status_200": sum(1 for r in requests if r.status == 200),
        "bytes_sent": sum(r.bytes_sent for r in requests),
        "min_gap": min(host_gaps, default=None),
        "short_gaps": len(short_gaps(requests, delay)) if delay is not None else None,
        "max_in_flight": max_in_flight(requests),
        "rate": (len(requests) - 1) / (requests[-1].start - requests[0].start)
        if len(requests) > 1 and requests[-1].start > requests[0].start
        else None,
    }


def _print_report(requests: list[ServedRequest], delay_of: Callable[[str], float | None]) -> None:
    print(f"{'host':18}{'requests':>9}{'200':>6}{'MB sent':>9}{'min gap':>9}{'short':>7}{'in flight':>10}{'req/s':>8}")
    for host, entries in sorted(by_host(requests).items(), key=lambda item: ipaddress.IPv4Address(item[0])):
        s = summarize(entries, delay_of(host))
        min_gap = "-" if s["min_gap"] is None else f"{s['min_gap']:.3f}"
        short = "-" if s["short_gaps"] is None else str(s["short_gaps"])
        rate = "-" if s["rate"] is None else f"{s['rate']:.2f}"
        print(
            f"{host:18}{s['requests']:9d}{s['status_200']:6d}{s['bytes_sent'] / 1e6:9.1f}{min_gap:>9}{short:>7}"
            f"{s['max_in_flight']:10d}{rate:>8}"
        )


def _delays(values: list[str]) -> dict[str, float]:
    return {address: float(delay) for address, delay in (value.split("=", 1) for value in values)}


def _sleep_until_interrupted() -> None:
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the corpus until Ctrl-C, then print the log's figures")
    serve.add_argument("--hosts", type=int, default=1)
    serve.add_argument("--crawl-delay", type=float, default=1.0, help="every host's Crawl-delay (negative: none)")
    serve.add_argument("--delay", action="append", default=[], metavar="ADDRESS=SECONDS", help="one host's Crawl-delay")
    serve.add_argument("--https", action="store_true", help="TLS with a self-signed certificate, HTTP/2 offered")
    report = commands.add_parser("report", help="per-host figures of an access log")
    report.add_argument("log", type=Path)
    report.add_argument("--delay", type=float, default=None, help="the delay short gaps are counted against")
    hog = commands.add_parser("hog", help="spin on cores until Ctrl-C")
    hog.add_argument("--processes", type=int, default=1)
    args = parser.parse_args(argv)
    exit_on_sigterm()

    if args.command == "serve":
        crawl_delay = None if args.crawl_delay < 0 else args.crawl_delay
        with RealWeb(args.hosts, crawl_delay=crawl_delay, delays=_delays(args.delay), https=args.https) as web:
            print(f"serving {len(web.pages)} pages on {len(web.addresses)} hosts: {web.url(0)} … {web.url(-1)}")
            print(f"access log: {web.access_log}  (Ctrl-C to stop)", flush=True)
            _sleep_until_interrupted()
            _print_report(web.log(), web.delay_of)
    elif args.command == "report":
        requests = read_log(args.log)
        _print_report(requests, lambda host: args.delay)
    else:
        with CpuHog(args.processes) as running:
            print(f"spinning: PIDs {' '.join(map(str, running.pids))}  (Ctrl-C to stop)", flush=True)
            _sleep_until_interrupted()


if __name__ == "__main__":
    main()

"""``scrapy serve``'s configuration, read once from the Scrapy settings."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import ip_address
from pathlib import Path

from scrapy.settings import BaseSettings

from crawler.api.forwarded import TrustedProxies
from crawler.guard.addresses import parse_networks
from crawler.setting_lists import list_setting

TIERS = ("anonymous", "user", "admin", "seed")


def parse_bind(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6)."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not host or not 0 < int(port) < 65536:
        raise ValueError(f"--bind wants HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


def metrics_token(settings: BaseSettings) -> str | None:
    """The scrape token of ``/metrics``: ``CRAWLER_API_METRICS_TOKEN``, else the first line of
    ``CRAWLER_API_METRICS_TOKEN_FILE`` (as Prometheus's ``credentials_file`` reads it); None."""
    token = settings.get("CRAWLER_API_METRICS_TOKEN") or ""
    path = settings.get("CRAWLER_API_METRICS_TOKEN_FILE") or ""
    if not token and path:
        try:
            token = Path(path).read_text().strip()
        except OSError as exc:
            raise ValueError(f"CRAWLER_API_METRICS_TOKEN_FILE: cannot read {path}: {exc.strerror}") from None
    if token and len(token) < 16:
        raise ValueError("the metrics scrape token has at least 16 characters")
    return token or None


def is_loopback(host: str) -> bool:
    """Whether listening on ``host`` keeps the server to this machine (``localhost`` or a
    loopback address; any other name may resolve to anything)."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class ServeConfig:
    host: str
    port: int
    database_url: str
    redis_url: str
    key_prefix: str
    session_seconds: float
    cookie_secure: bool
    rate_limits: dict[str, int]
    rate_window: float
    login_failures: int
    login_failure_window: float
    trusted_proxies: TrustedProxies
    heartbeat_timeout: float
    metrics_top_domains: int
    metrics_token: str | None = None
    certfile: str | None = None
    keyfile: str | None = None

    @property
    def scheme(self) -> str:
        return "https" if self.certfile else "http"

    @classmethod
    def from_settings(
        cls, settings: BaseSettings, bind: str | None = None, certfile: str | None = None, keyfile: str | None = None
    ) -> ServeConfig:
        host, port = parse_bind(bind or settings.get("CRAWLER_API_BIND"))
        limits = {tier: int(limit) for tier, limit in settings.getdict("CRAWLER_API_RATE_LIMITS").items()}
        missing = set(TIERS) - limits.keys()
        if missing:
            raise ValueError(f"CRAWLER_API_RATE_LIMITS lacks the tiers {', '.join(sorted(missing))}")
        if bool(certfile) != bool(keyfile):
            raise ValueError("TLS wants both --certfile and --keyfile")
        networks = list_setting(settings, "CRAWLER_API_TRUSTED_PROXIES")
        return cls(
            host=host,
            port=port,
            database_url=settings.get("DATABASE_URL"),
            redis_url=settings.get("REDIS_URL"),
            key_prefix=f"{settings['BOT_NAME']}:api:",
            session_seconds=settings.getfloat("CRAWLER_API_SESSION_SECONDS"),
            # A cookie sent over TLS is never to be sent without it.
            cookie_secure=settings.getbool("CRAWLER_API_COOKIE_SECURE") or bool(certfile),
            rate_limits=limits,
            rate_window=settings.getfloat("CRAWLER_API_RATE_WINDOW"),
            login_failures=settings.getint("CRAWLER_API_LOGIN_FAILURES"),
            login_failure_window=settings.getfloat("CRAWLER_API_LOGIN_FAILURE_WINDOW"),
            trusted_proxies=TrustedProxies(parse_networks(networks, "CRAWLER_API_TRUSTED_PROXIES")),
            heartbeat_timeout=settings.getfloat("CRAWLER_API_HEARTBEAT_TIMEOUT"),
            metrics_top_domains=settings.getint("CRAWLER_API_METRICS_TOP_DOMAINS"),
            metrics_token=metrics_token(settings),
            certfile=certfile,
            keyfile=keyfile,
        )

"""``scrapy serve``'s configuration, read once from the Scrapy settings."""

from __future__ import annotations

from dataclasses import dataclass

from scrapy.settings import BaseSettings

TIERS = ("anonymous", "user", "admin", "seed")


def parse_bind(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6)."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not host or not 0 < int(port) < 65536:
        raise ValueError(f"--bind wants HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


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
    heartbeat_timeout: float
    metrics_top_domains: int

    @classmethod
    def from_settings(cls, settings: BaseSettings, bind: str | None = None) -> ServeConfig:
        host, port = parse_bind(bind or settings.get("CRAWLER_API_BIND"))
        limits = {tier: int(limit) for tier, limit in settings.getdict("CRAWLER_API_RATE_LIMITS").items()}
        missing = set(TIERS) - limits.keys()
        if missing:
            raise ValueError(f"CRAWLER_API_RATE_LIMITS lacks the tiers {', '.join(sorted(missing))}")
        return cls(
            host=host,
            port=port,
            database_url=settings.get("DATABASE_URL"),
            redis_url=settings.get("REDIS_URL"),
            key_prefix=f"{settings['BOT_NAME']}:api:",
            session_seconds=settings.getfloat("CRAWLER_API_SESSION_SECONDS"),
            cookie_secure=settings.getbool("CRAWLER_API_COOKIE_SECURE"),
            rate_limits=limits,
            rate_window=settings.getfloat("CRAWLER_API_RATE_WINDOW"),
            heartbeat_timeout=settings.getfloat("CRAWLER_API_HEARTBEAT_TIMEOUT"),
            metrics_top_domains=settings.getint("CRAWLER_API_METRICS_TOP_DOMAINS"),
        )

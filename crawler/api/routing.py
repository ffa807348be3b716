"""Routes as data: each says its method, path, the least role that may call it, its parameters
and body. The app registers them and the OpenAPI description is written from them, so the
two cannot drift apart."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    schema: dict[str, Any]
    description: str = ""
    where: str = "query"
    required: bool = False


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    path: str
    handler: Handler
    role: str
    """The least role that may call it: ``anonymous``, ``user`` or ``admin``."""
    summary: str
    parameters: tuple[Param, ...] = ()
    body: dict[str, Any] | None = None
    """JSON schema of the request body (JSON only: see ``csrf``)."""
    tier: str | None = None
    """A rate-limit tier counted on top of the caller's (``seed``)."""
    statuses: tuple[int, ...] = field(default=())
    """Answers besides 200 and the ones every route may give."""
    produces: str = "application/json"


DOMAIN = Param(
    "domain",
    {"type": "string", "minLength": 1, "maxLength": 255},
    "host[:port], or * for the whole crawl",
    "path",
    True,
)
URLS_BODY = {
    "type": "object",
    "required": ["urls"],
    "properties": {
        "urls": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 1000},
        "spider": {"type": ["string", "null"], "minLength": 1, "maxLength": 64},
        "crawl": {"type": ["string", "null"], "minLength": 1, "maxLength": 255},
    },
}

"""Reading and checking request parameters; a bad one is a 400 that says why."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from crawler.api.routing import Param


def bad_request(message: str) -> web.HTTPBadRequest:
    return web.HTTPBadRequest(text=json.dumps({"error": message}), content_type="application/json")


def not_found(message: str) -> web.HTTPNotFound:
    return web.HTTPNotFound(text=json.dumps({"error": message}), content_type="application/json")


def too_many(message: str, retry_after: int) -> web.HTTPTooManyRequests:
    return web.HTTPTooManyRequests(
        text=json.dumps({"error": message}), content_type="application/json", headers={"Retry-After": str(retry_after)}
    )


def integer(request: web.Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise bad_request(f"{name} must be an integer") from None
    if not low <= value <= high:
        raise bad_request(f"{name} must be between {low} and {high}")
    return value


def choice(request: web.Request, name: str, default: str, allowed: tuple[str, ...] | list[str]) -> str:
    value = request.query.get(name, default)
    if value not in allowed:
        raise bad_request(f"{name} must be one of {', '.join(allowed)}")
    return value


def text(request: web.Request, name: str, max_length: int = 2048) -> str | None:
    value = request.query.get(name)
    if value is not None and not _fits(value, max_length):
        raise bad_request(f"{name} must be 1 to {max_length} characters, without NUL")
    return value


def timestamp_value(raw: str) -> datetime:
    """ISO 8601, or seconds since the epoch; without a zone, UTC. Raises ValueError."""
    try:
        moment = (
            datetime.fromtimestamp(float(raw), UTC)
            if raw.replace(".", "", 1).isdigit()
            else datetime.fromisoformat(raw)
        )
    except (OverflowError, OSError) as exc:
        raise ValueError(str(exc)) from None
    if not 1970 <= moment.year <= 9000:
        raise ValueError("out of range")
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def timestamp(request: web.Request, name: str) -> datetime | None:
    raw = request.query.get(name)
    if raw is None:
        return None
    try:
        return timestamp_value(raw)
    except ValueError:
        raise bad_request(f"{name} must be an ISO 8601 time or seconds since the epoch") from None


async def body(request: web.Request) -> dict[str, Any]:
    """A JSON object (the same-origin middleware has refused any other type already). JSON is
    UTF-8 whatever charset the request names."""
    try:
        data = json.loads(await request.read())
    except (ValueError, RecursionError):  # RecursionError: arrays or objects nested thousands deep
        raise bad_request("the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise bad_request("the body must be a JSON object")
    return data


def string_field(data: dict[str, Any], name: str, max_length: int = 256) -> str:
    value = data.get(name)
    if not _fits(value, max_length):
        raise bad_request(f"{name} must be a string of 1 to {max_length} characters, without NUL")
    return value


def optional_string_field(data: dict[str, Any], name: str, max_length: int) -> str | None:
    return None if data.get(name) is None else string_field(data, name, max_length)


def _fits(value: Any, max_length: int) -> bool:
    # The databases' text columns take no NUL character (PostgreSQL refuses it).
    return isinstance(value, str) and 0 < len(value) <= max_length and "\x00" not in value


def check_path(request: web.Request, parameters: Iterable[Param]) -> None:
    """The route's path parameters within their schema's length, without NUL."""
    for param in parameters:
        longest = param.schema.get("maxLength", 2048)
        if param.where == "path" and not _fits(request.match_info[param.name], longest):
            raise bad_request(f"{param.name} must be 1 to {longest} characters, without NUL")


def url_list(data: dict[str, Any], limit: int = 1000) -> list[str]:
    urls = data.get("urls")
    if not isinstance(urls, list) or not urls or len(urls) > limit or not all(isinstance(u, str) for u in urls):
        raise bad_request(f'urls must be a list of 1 to {limit} strings: {{"urls": ["https://…"]}}')
    return urls

"""Reading and checking request parameters; a bad one is a 400 that says why."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")


def bad_request(message: str) -> web.HTTPBadRequest:
    return web.HTTPBadRequest(text=json.dumps({"error": message}), content_type="application/json")


def not_found(message: str) -> web.HTTPNotFound:
    return web.HTTPNotFound(text=json.dumps({"error": message}), content_type="application/json")


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
    if value is not None and (not value or len(value) > max_length or "\x00" in value):
        raise bad_request(f"{name} must be 1 to {max_length} characters")
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
    """A JSON object, or a form (``urls`` may then repeat, or hold one URL per line)."""
    if request.content_type == "application/json":
        try:
            data = await request.json()
        except ValueError:
            raise bad_request("the body is not valid JSON") from None
        if not isinstance(data, dict):
            raise bad_request("the body must be a JSON object")
        return data
    if request.content_type not in FORMS:
        raise web.HTTPUnsupportedMediaType(
            text=json.dumps({"error": f"send JSON or a form, not {request.content_type}"}),
            content_type="application/json",
        )
    try:
        form = await request.post()
    except ValueError as exc:  # a malformed multipart body
        raise bad_request(f"unreadable form: {exc}") from None
    data: dict[str, Any] = {key: form.get(key) for key in form}
    if "urls" in form:
        data["urls"] = [
            line.strip() for value in form.getall("urls") for line in str(value).splitlines() if line.strip()
        ]
    return data


def string_field(data: dict[str, Any], name: str, max_length: int = 256) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value or len(value) > max_length:
        raise bad_request(f"{name} must be a string of 1 to {max_length} characters")
    return value


def url_list(data: dict[str, Any], limit: int = 1000) -> list[str]:
    urls = data.get("urls")
    if not isinstance(urls, list) or not urls or len(urls) > limit or not all(isinstance(u, str) for u in urls):
        raise bad_request(f'urls must be a list of 1 to {limit} strings: {{"urls": ["https://…"]}}')
    return urls

"""The OpenAPI 3.1 description, written from the route table the app serves."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from crawler.api.csrf import STATE_CHANGING
from crawler.api.routing import Route

_REASONS = {
    200: "OK",
    202: "Accepted",
    400: "Bad request",
    401: "Not logged in",
    403: "Role may not, or a request from another site",
    404: "Not found",
    409: "Conflict",
    415: "Send JSON, or no body",
    429: "Rate limit reached (see Retry-After)",
    503: "Unavailable",
}
_ERROR = {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]}
_PATH_PARAM = re.compile(r"\{(\w+)(?::[^}]*)?\}")


def _operation(route: Route) -> dict[str, Any]:
    success = next((s for s in route.statuses if s < 300), 200)
    responses: dict[str, Any] = {
        str(success): {"description": _REASONS[success], "content": {route.produces: {"schema": {}}}}
    }
    errors = {429, *(s for s in route.statuses if s >= 300)}
    if route.role != "anonymous":
        errors |= {401, 403}
    if route.parameters or route.body:
        errors.add(400)
    if route.method in STATE_CHANGING:
        errors |= {403, 415}
    for status in sorted(errors):
        entry: dict[str, Any] = {"description": _REASONS[status], "content": {"application/json": {"schema": _ERROR}}}
        if status == 429:
            entry["headers"] = {"Retry-After": {"schema": {"type": "integer"}, "description": "seconds to wait"}}
        responses[str(status)] = entry
    name = _PATH_PARAM.sub(r"\1", route.path).strip("/").replace("/", "_") or "index"
    operation: dict[str, Any] = {
        "summary": route.summary,
        "operationId": f"{route.method.lower()}_{name}",
        "x-role": route.role,
        "responses": responses,
    }
    if route.parameters:
        operation["parameters"] = [
            {
                "name": p.name,
                "in": p.where,
                "required": p.required,
                "schema": p.schema,
                **({"description": p.description} if p.description else {}),
            }
            for p in route.parameters
        ]
    if route.body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": route.body}},
        }
    if route.role != "anonymous":
        operation["security"] = [{"session": []}]
    return operation


def describe(routes: Iterable[Route]) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        paths.setdefault(_PATH_PARAM.sub(r"{\1}", route.path), {})[route.method.lower()] = _operation(route)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "crawler",
            "version": "1",
            "description": "The crawl's API: statistics, frontier, pages, domains, controls and jobs. Roles: "
            "anonymous (/health, /api/stats, /metrics), user (reads everything), admin (everything).",
        },
        "components": {"securitySchemes": {"session": {"type": "apiKey", "in": "cookie", "name": "crawler_session"}}},
        "paths": paths,
    }

"""The dashboard's files (read through importlib.resources: the package may run from a zipped
egg) and the OpenAPI description."""

from __future__ import annotations

from importlib.resources import files

from aiohttp import web

from crawler.api import params
from crawler.api.routing import Param, Route

STATIC = {
    "app.js": "text/javascript",
    "style.css": "text/css",
    "plot.js": "text/javascript",
    "favicon.svg": "image/svg+xml",
}
_CACHE = "no-cache"


def _file(name: str) -> bytes:
    return files("crawler.api").joinpath("static", name).read_bytes()


async def index(request: web.Request) -> web.Response:
    return web.Response(
        body=_file("index.html"), content_type="text/html", charset="utf-8", headers={"Cache-Control": _CACHE}
    )


async def static(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name not in STATIC:
        raise params.not_found(f"no file {name!r}")
    return web.Response(body=_file(name), content_type=STATIC[name], charset="utf-8", headers={"Cache-Control": _CACHE})


async def openapi(request: web.Request) -> web.Response:
    return web.json_response(request.app[OPENAPI])


OPENAPI = web.AppKey("openapi", dict)

ROUTES = (
    Route("GET", "/", index, "anonymous", "The dashboard", produces="text/html"),
    Route(
        "GET",
        "/static/{name}",
        static,
        "anonymous",
        "The dashboard's scripts and styles",
        (Param("name", {"type": "string", "enum": sorted(STATIC)}, where="path", required=True),),
        statuses=(404,),
        produces="text/plain",
    ),
    Route("GET", "/openapi.json", openapi, "anonymous", "This description"),
)

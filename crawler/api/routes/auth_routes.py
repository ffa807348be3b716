"""Log in (a session cookie), log out, and who am I."""

from __future__ import annotations

import logging

from aiohttp import web

from crawler.api import params
from crawler.api.auth import COOKIE, authenticate
from crawler.api.context import client, context, identity
from crawler.api.routing import Route

logger = logging.getLogger(__name__)

LOGIN_PATH = "/api/auth/login"
LOGIN_BODY = {
    "type": "object",
    "required": ["username", "password"],
    "properties": {
        "username": {"type": "string", "minLength": 1, "maxLength": 64},
        "password": {"type": "string", "minLength": 1, "maxLength": 1024},
    },
}


async def login(request: web.Request) -> web.Response:
    """Failed logins are counted per account (whoever sends them, from wherever); past the limit
    the account's logins answer 429 until the oldest failure leaves the window, right password
    or not, so that the answer tells nothing of the guess."""
    found = context(request)
    data = await params.body(request)
    username, password = params.string_field(data, "username", 64), params.string_field(data, "password", 1024)
    attempt = found.login_attempts.hit(username)
    if not attempt.allowed:
        logger.warning("login as %r from %s refused: too many failed logins", username, client(request))
        raise params.too_many("too many failed logins for this user: try again later", attempt.retry_after)
    failed = False
    try:
        found_user = await authenticate(found.db, username, password)
        failed = found_user is None
    finally:
        if not failed:  # only failures count (the database away is not one)
            found.login_attempts.undo(username)
    if found_user is None:
        logger.warning("failed login as %r from %s", username, client(request))
        return web.json_response({"error": "unknown user or wrong password"}, status=401)
    who, stamp = found_user
    token = await found.sessions.create(who.username, stamp)
    response = web.json_response({"username": who.username, "role": who.role})
    response.set_cookie(
        COOKIE,
        token,
        max_age=int(found.config.session_seconds),
        httponly=True,
        samesite="Strict",
        secure=found.config.cookie_secure,
        path="/",
    )
    return response


async def logout(request: web.Request) -> web.Response:
    token = request.cookies.get(COOKIE)
    if token:
        await context(request).sessions.delete(token)
    response = web.json_response({"logged_out": True})
    response.del_cookie(COOKIE, path="/")
    return response


async def me(request: web.Request) -> web.Response:
    # Not logged in is an answer, not an error: the dashboard asks before it shows the login form.
    who = identity(request)
    return web.json_response({"username": who.username or None, "role": who.role})


ROUTES = (
    Route(
        "POST",
        LOGIN_PATH,
        login,
        "anonymous",
        "Log in: sets the session cookie (failed logins per account are limited: 429)",
        body=LOGIN_BODY,
        statuses=(400, 401),
    ),
    Route("POST", "/api/auth/logout", logout, "anonymous", "Log out: ends the session"),
    Route("GET", "/api/auth/me", me, "anonymous", "The logged-in user and role (username null: not logged in)"),
)

"""Users, passwords and sessions.

Passwords are argon2id hashes (argon2-cffi's defaults). A session is a random token in an
HttpOnly cookie; only its SHA-256 is stored (in Redis with a TTL, else in the ``sessions``
table), so whoever reads the store cannot take over a session. A session names its user and the
user's session stamp when it was made, never the role: the role is read from ``users`` at each
request (one look-up by primary key), and a new stamp ends every session made before it.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from typing import Protocol

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from crawler.storage import StorageBackend
from crawler.storage.accounts import (
    create_session,
    delete_session,
    end_sessions,
    session_user,
    user_access,
    user_credentials,
)
from crawler.storage.accounts import save_user as store_user
from crawler.storage.values import utc_now

ROLES = ("user", "admin")
COOKIE = "crawler_session"
_RANK = {"anonymous": 0, "user": 1, "admin": 2}
_HASHER = PasswordHasher()


@cache
def _dummy_hash() -> str:
    """Verified against when the user does not exist, so that the answer takes as long. Made on
    first use: hashing is slow by design, and every ``scrapy`` command would pay it at import
    (Scrapy imports every project command)."""
    return _HASHER.hash("not a password anyone has")


@dataclass(frozen=True, slots=True)
class Identity:
    username: str
    role: str

    def may(self, role: str) -> bool:
        return _RANK[self.role] >= _RANK[role]


ANONYMOUS = Identity("", "anonymous")
SCRAPER = Identity("", "anonymous")
"""A metrics scraper with the scrape token: it may read what anonymous callers may, uncounted by
the rate limits (Prometheus cannot log in), and sees the crawls' names in ``/metrics``."""


def bearer_matches(authorization: str | None, token: str | None) -> bool:
    """Whether an ``Authorization`` header carries ``token`` as a bearer token (as Prometheus's
    ``authorization`` block sends it); compared in constant time."""
    if not token or not authorization or not authorization.startswith("Bearer "):
        return False
    return hmac.compare_digest(authorization.removeprefix("Bearer ").strip().encode(), token.encode())


def hash_password(password: str) -> str:
    return _HASHER.hash(password)


def _verify(stored: str, password: str) -> bool:
    try:
        return _HASHER.verify(stored, password)
    except (VerificationError, InvalidHashError):
        return False


def _new_stamp() -> str:
    return secrets.token_hex(16)


async def save_user(db: StorageBackend, username: str, role: str, password: str) -> None:
    """Add the user, or give an existing one this role and password. A new password ends the
    user's sessions; the same one keeps them (a change of role alone takes effect at the next
    request, as roles are read at each)."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    existing = await user_credentials(db, username)
    same_password = existing is not None and await asyncio.to_thread(_verify, existing[1], password)
    stamp = existing[2] if existing is not None and same_password else _new_stamp()
    await store_user(db, username, role, hash_password(password), stamp, utc_now())


async def end_user_sessions(db: StorageBackend, username: str) -> bool:
    """End every session of the user, who stays; whether the user exists."""
    return await end_sessions(db, username, _new_stamp(), utc_now())


async def authenticate(db: StorageBackend, username: str, password: str) -> tuple[Identity, str] | None:
    """The identity and session stamp of the user if the password is theirs, else None."""
    credentials = await user_credentials(db, username)
    role, stored, stamp = credentials if credentials is not None else (None, _dummy_hash(), "")
    # argon2 costs tens of milliseconds of CPU: off the event loop.
    valid = await asyncio.to_thread(_verify, stored, password)
    return (Identity(username, role), stamp) if valid and role in ROLES else None


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _identity(username: str, role: str) -> Identity | None:
    # A role written by hand in the users table and unknown here grants nothing.
    return Identity(username, role) if role in ROLES else None


class SessionStore(Protocol):
    async def create(self, username: str, session_stamp: str) -> str: ...
    async def get(self, token: str) -> Identity | None:
        """The session's user with its role of now, if the session lives and its user's stamp
        has not changed since it was made."""

    async def delete(self, token: str) -> None: ...


class RedisSessions:
    """Sessions in Redis (with a TTL); their users' roles and stamps in the database."""

    def __init__(self, client, prefix: str, seconds: float, db: StorageBackend):  # redis.asyncio.Redis
        self.client = client
        self.prefix = prefix
        self.seconds = seconds
        self.db = db

    async def create(self, username: str, session_stamp: str) -> str:
        token = secrets.token_urlsafe(32)
        value = json.dumps({"username": username, "stamp": session_stamp, "created_at": utc_now().isoformat()})
        await self.client.set(f"{self.prefix}{_digest(token)}", value, ex=int(self.seconds))
        return token

    async def get(self, token: str) -> Identity | None:
        value = await self.client.get(f"{self.prefix}{_digest(token)}")
        if value is None:
            return None
        session = json.loads(value)
        access = await user_access(self.db, session["username"])
        if access is None or access[1] != session.get("stamp"):
            return None
        return _identity(session["username"], access[0])

    async def delete(self, token: str) -> None:
        await self.client.delete(f"{self.prefix}{_digest(token)}")


class DatabaseSessions:
    def __init__(self, db: StorageBackend, seconds: float):
        self.db = db
        self.seconds = seconds

    async def create(self, username: str, session_stamp: str) -> str:
        token = secrets.token_urlsafe(32)
        now = utc_now()
        expires = now + timedelta(seconds=self.seconds)
        await create_session(self.db, _digest(token), username, session_stamp, now, expires)
        return token

    async def get(self, token: str) -> Identity | None:
        found = await session_user(self.db, _digest(token), utc_now())
        return _identity(*found) if found is not None else None

    async def delete(self, token: str) -> None:
        await delete_session(self.db, _digest(token))

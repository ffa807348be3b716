"""Users, passwords and sessions.

Passwords are argon2id hashes (argon2-cffi's defaults). A session is a random token in an
HttpOnly cookie; only its SHA-256 is stored (in Redis with a TTL, else in the ``sessions``
table), so whoever reads the store cannot take over a session.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from typing import Protocol

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from crawler.storage import StorageBackend
from crawler.storage.accounts import create_session, delete_session, session_user, user_credentials
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


def hash_password(password: str) -> str:
    return _HASHER.hash(password)


def _verify(stored: str, password: str) -> bool:
    try:
        return _HASHER.verify(stored, password)
    except (VerificationError, InvalidHashError):
        return False


async def save_user(db: StorageBackend, username: str, role: str, password: str) -> None:
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    await store_user(db, username, role, hash_password(password), utc_now())


async def authenticate(db: StorageBackend, username: str, password: str) -> Identity | None:
    credentials = await user_credentials(db, username)
    role, stored = credentials if credentials is not None else (None, _dummy_hash())
    # argon2 costs tens of milliseconds of CPU: off the event loop.
    valid = await asyncio.to_thread(_verify, stored, password)
    return Identity(username, role) if valid and role else None


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class SessionStore(Protocol):
    async def create(self, identity: Identity) -> str: ...
    async def get(self, token: str) -> Identity | None: ...
    async def delete(self, token: str) -> None: ...


class RedisSessions:
    def __init__(self, client, prefix: str, seconds: float):  # redis.asyncio.Redis
        self.client = client
        self.prefix = prefix
        self.seconds = seconds

    async def create(self, identity: Identity) -> str:
        token = secrets.token_urlsafe(32)
        value = json.dumps({"username": identity.username, "role": identity.role, "created_at": utc_now().isoformat()})
        await self.client.set(f"{self.prefix}{_digest(token)}", value, ex=int(self.seconds))
        return token

    async def get(self, token: str) -> Identity | None:
        value = await self.client.get(f"{self.prefix}{_digest(token)}")
        if value is None:
            return None
        data = json.loads(value)
        return Identity(data["username"], data["role"])

    async def delete(self, token: str) -> None:
        await self.client.delete(f"{self.prefix}{_digest(token)}")


class DatabaseSessions:
    def __init__(self, db: StorageBackend, seconds: float):
        self.db = db
        self.seconds = seconds

    async def create(self, identity: Identity) -> str:
        token = secrets.token_urlsafe(32)
        now = utc_now()
        expires = now + timedelta(seconds=self.seconds)
        await create_session(self.db, _digest(token), identity.username, identity.role, now, expires)
        return token

    async def get(self, token: str) -> Identity | None:
        found = await session_user(self.db, _digest(token), utc_now())
        return Identity(*found) if found is not None else None

    async def delete(self, token: str) -> None:
        await delete_session(self.db, _digest(token))

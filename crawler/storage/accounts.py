"""Users of ``scrapy serve`` and their sessions, where there is no Redis: ``users``, ``sessions``
(only a digest of each session token is stored)."""

from __future__ import annotations

from datetime import datetime

from crawler.storage.backend import StorageBackend


async def save_user(backend: StorageBackend, username: str, role: str, password_hash: str, now: datetime) -> None:
    """Add the user, or give an existing one this role and password."""
    await backend.execute(
        "INSERT INTO users (username, role, password_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (username) DO UPDATE SET role = excluded.role, password_hash = excluded.password_hash, "
        "updated_at = excluded.updated_at",
        (username, role, password_hash, now, now),
    )


async def user_credentials(backend: StorageBackend, username: str) -> tuple[str, str] | None:
    """The user's role and password hash, or None for no such user."""
    rows = await backend.execute("SELECT role, password_hash FROM users WHERE username = ?", (username,))
    return (rows[0][0], rows[0][1]) if rows else None


async def create_session(
    backend: StorageBackend, token_hash: str, username: str, role: str, now: datetime, expires_at: datetime
) -> None:
    # Expired sessions go as new ones come: the table stays as small as the live sessions.
    await backend.execute("DELETE FROM sessions WHERE expires_at < ?", (now,))
    await backend.execute(
        "INSERT INTO sessions (token_hash, username, role, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
        (token_hash, username, role, now, expires_at),
    )


async def session_user(backend: StorageBackend, token_hash: str, now: datetime) -> tuple[str, str] | None:
    """The username and role of a live session, or None."""
    rows = await backend.execute(
        "SELECT username, role FROM sessions WHERE token_hash = ? AND expires_at > ?", (token_hash, now)
    )
    return (rows[0][0], rows[0][1]) if rows else None


async def delete_session(backend: StorageBackend, token_hash: str) -> None:
    await backend.execute("DELETE FROM sessions WHERE token_hash = ?", (token_hash,))

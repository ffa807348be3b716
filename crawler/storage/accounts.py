"""Users of ``scrapy serve`` and their sessions, where there is no Redis: ``users``, ``sessions``
(only a digest of each session token is stored). A session holds its user's ``session_stamp``
of when it was made, never the role: it lives while the stamp is the user's."""

from __future__ import annotations

from datetime import datetime

from crawler.storage.backend import StorageBackend


async def save_user(
    backend: StorageBackend, username: str, role: str, password_hash: str, session_stamp: str, now: datetime
) -> None:
    """Add the user, or give an existing one this role, password and session stamp."""
    await backend.execute(
        "INSERT INTO users (username, role, password_hash, session_stamp, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (username) DO UPDATE SET role = excluded.role, password_hash = excluded.password_hash, "
        "session_stamp = excluded.session_stamp, updated_at = excluded.updated_at",
        (username, role, password_hash, session_stamp, now, now),
    )


async def user_credentials(backend: StorageBackend, username: str) -> tuple[str, str, str] | None:
    """The user's role, password hash and session stamp, or None for no such user."""
    rows = await backend.execute("SELECT role, password_hash, session_stamp FROM users WHERE username = ?", (username,))
    return (rows[0][0], rows[0][1], rows[0][2]) if rows else None


async def user_access(backend: StorageBackend, username: str) -> tuple[str, str] | None:
    """The user's role and session stamp (one look-up by primary key), or None for no such user."""
    rows = await backend.execute("SELECT role, session_stamp FROM users WHERE username = ?", (username,))
    return (rows[0][0], rows[0][1]) if rows else None


async def delete_user(backend: StorageBackend, username: str) -> bool:
    """Delete the user and its stored sessions; whether it existed."""
    await backend.execute("DELETE FROM sessions WHERE username = ?", (username,))
    return await backend.execute_count("DELETE FROM users WHERE username = ?", (username,)) > 0


async def end_sessions(backend: StorageBackend, username: str, session_stamp: str, now: datetime) -> bool:
    """Give the user a new session stamp (its sessions anywhere end) and delete its stored
    sessions; whether the user exists."""
    changed = await backend.execute_count(
        "UPDATE users SET session_stamp = ?, updated_at = ? WHERE username = ?", (session_stamp, now, username)
    )
    await backend.execute("DELETE FROM sessions WHERE username = ?", (username,))
    return changed > 0


async def create_session(
    backend: StorageBackend, token_hash: str, username: str, session_stamp: str, now: datetime, expires_at: datetime
) -> None:
    # Expired sessions go as new ones come: the table stays as small as the live sessions.
    await backend.execute("DELETE FROM sessions WHERE expires_at < ?", (now,))
    await backend.execute(
        "INSERT INTO sessions (token_hash, username, session_stamp, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
        (token_hash, username, session_stamp, now, expires_at),
    )


async def session_user(backend: StorageBackend, token_hash: str, now: datetime) -> tuple[str, str] | None:
    """The username and current role of a live session whose stamp is still its user's, or None."""
    rows = await backend.execute(
        "SELECT users.username, users.role FROM sessions JOIN users ON users.username = sessions.username "
        "AND users.session_stamp = sessions.session_stamp WHERE sessions.token_hash = ? AND sessions.expires_at > ?",
        (token_hash, now),
    )
    return (rows[0][0], rows[0][1]) if rows else None


async def delete_session(backend: StorageBackend, token_hash: str) -> None:
    await backend.execute("DELETE FROM sessions WHERE token_hash = ?", (token_hash,))

"""What the API benchmarks share: a scratch PostgreSQL database and rate limits out of the way."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from tests.conftest import POSTGRES_ADMIN_URL
from tests.helpers import Database

UNLIMITED = json.dumps({"anonymous": 10**6, "user": 10**6, "admin": 10**6, "seed": 10**6})
"""CRAWLER_API_RATE_LIMITS for a benchmark: it measures the API, not its limits."""


@contextmanager
def scratch_database(prefix: str) -> Iterator[Database]:
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield Database(POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}")
    finally:
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

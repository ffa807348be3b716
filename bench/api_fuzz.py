"""Fuzz ``scrapy serve`` against its own OpenAPI description with schemathesis: every operation,
generated valid and invalid parameters and bodies, as an admin (every route reachable), on a
PostgreSQL database holding what a crawl writes. The check that matters: no 5xx answer."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from bench.api_common import UNLIMITED, scratch_database
from tests.api_contract import populate_as_a_crawl
from tests.api_server import ServeProcess, create_users, migrate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max-examples", type=int, default=50)
    args = parser.parse_args()
    with scratch_database("crawler_bench_fuzz") as database:
        migrate(database)
        populate_as_a_crawl(database, datetime.now(UTC))
        create_users(database)
        server = ServeProcess(database, Path(tempfile.mkdtemp()) / "serve.log", {"CRAWLER_API_RATE_LIMITS": UNLIMITED})
        try:
            cookie = server.client().login("admin").cookies["crawler_session"]
            command = [
                sys.executable,
                "-m",
                "schemathesis.cli",
                "run",
                f"{server.url}/openapi.json",
                "--checks",
                "not_a_server_error",
                "--max-examples",
                str(args.max_examples),
                "--exclude-path",
                "/api/auth/logout",  # it would end the session the run uses
                "-H",
                f"Cookie: crawler_session={cookie}",
                "--seed",
                "1",
                "--no-color",
            ]
            # In a folder of its own: schemathesis leaves a cache of its findings where it runs.
            result = subprocess.run(command, text=True, capture_output=True, cwd=tempfile.mkdtemp())
            print(result.stdout[-6000:], result.stderr[-2000:])
            print(
                f"schemathesis exit status {result.returncode} ({'no 5xx found' if result.returncode == 0 else 'failures above'})"
            )
        finally:
            server.stop()


if __name__ == "__main__":
    main()

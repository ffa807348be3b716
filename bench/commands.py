"""The other checkouts of the project a benchmark may crawl with too (``--also``)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_also_option(parser: argparse.ArgumentParser) -> None:
    """``--also NAME=PATH``: also crawl with the project checked out at PATH (``git archive
    COMMIT | tar -x -C PATH``), reported as NAME."""
    parser.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="also crawl with the project checked out at PATH, reported as NAME",
    )


def other_checkouts(args: argparse.Namespace) -> dict[str, Path]:
    """The checkouts ``--also`` named, by name."""
    return {name: Path(path) for name, path in (also.split("=", 1) for also in args.also)}

"""Names of a process's WARC files, as Heritrix names its own: a prefix, when the file was
opened, its serial number and who wrote it, so that files of many processes sort by time in one
folder and never collide."""

from __future__ import annotations

import re
from datetime import datetime

EXTENSION = ".warc.gz"
IN_PROGRESS = ".open"
"""Added to the name of the file being written, as Heritrix does: taken off when it is closed."""
INDEX_EXTENSION = ".cdxj"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def warc_name(prefix: str, opened_at: datetime, serial: int, writer: str) -> str:
    """``PREFIX-YYYYmmddHHMMSSfff-SERIAL-WRITER.warc.gz`` (UTC, milliseconds), with characters
    other than letters, digits, ``.``, ``_`` and ``-`` in ``writer`` (a worker id,
    ``host:pid:job``) replaced by ``-``."""
    stamp = opened_at.strftime("%Y%m%d%H%M%S") + f"{opened_at.microsecond // 1000:03d}"
    return f"{prefix}-{stamp}-{serial:05d}-{_UNSAFE.sub('-', writer)}{EXTENSION}"


def index_name(warc: str) -> str:
    """The CDXJ index beside the WARC file ``warc``."""
    return warc.removesuffix(EXTENSION) + INDEX_EXTENSION

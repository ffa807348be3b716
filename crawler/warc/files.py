"""The WARC files of one crawl process. Called from one thread (``crawler.warc.writer``'s).

Records are appended each as one gzip member to the file being written (``NAME.warc.gz.open``),
flushed after each call, so that the record a row points to is with the operating system before
the row is written; once the file reaches ``max_size`` it is closed: it takes its final name and
its CDXJ index is written beside it. Every file starts with a ``warcinfo`` record.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from warcio.recordloader import ArcWarcRecord

from crawler.warc import Archived
from crawler.warc.exchange import Exchange
from crawler.warc.index import write_index
from crawler.warc.names import IN_PROGRESS, warc_name
from crawler.warc.records import RecordMaker, record_id, serialized

logger = logging.getLogger(__name__)


class WarcFiles:
    def __init__(
        self,
        folder: Path,
        prefix: str,
        writer: str,
        max_size: int,
        info: Mapping[str, str],
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ):
        self.folder = folder
        self.prefix = prefix
        self.writer = writer
        """Who writes the files (a worker id), in their names."""
        self.max_size = max_size
        self.info = info
        """The fields of each file's ``warcinfo`` record."""
        self.clock = clock
        self.records = RecordMaker()
        self.written: Counter[str] = Counter()
        """Records by type, and ``bytes`` and ``files``."""
        self._serial = 0
        self._file: BinaryIO | None = None
        self._name = ""
        self._size = 0

    def fetch(self, exchange: Exchange) -> Archived:
        """Archive a fetch: its response (or revisit) record, then its request record."""
        answer, request = self.records.fetch(exchange)
        name, offset = self._append([answer, request])
        return Archived(name, offset, record_id(answer), answer.rec_headers.get_header("WARC-Payload-Digest"))

    def outlinks(self, url: str, concurrent_to: str, links_json: str, date: datetime) -> None:
        """Archive a page's outlinks (a JSON list) beside its response record ``concurrent_to``."""
        self._append([self.records.outlinks(url, concurrent_to, json.loads(links_json), date)])

    def close(self) -> None:
        if self._file is not None:
            self._close(self._file)

    def _append(self, records: Sequence[ArcWarcRecord]) -> tuple[str, int]:
        """Write ``records`` one after the other; the file's name and the first one's offset."""
        file = self._file or self._open()
        name, first = self._name, self._size
        for record in records:
            self._write(file, record)
        file.flush()
        if self._size >= self.max_size:
            self._close(file)
        return name, first

    def _write(self, file: BinaryIO, record: ArcWarcRecord) -> None:
        member = serialized(record)
        file.write(member)
        self._size += len(member)
        self.written[record.rec_type] += 1
        self.written["bytes"] += len(member)

    def _open(self) -> BinaryIO:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._name = warc_name(self.prefix, self.clock(), self._serial, self.writer)
        self._serial += 1
        self._size = 0
        file = self._file = (self.folder / (self._name + IN_PROGRESS)).open("xb")
        self.written["files"] += 1
        self._write(file, self.records.warcinfo(self._name, self.info))
        return file

    def _close(self, file: BinaryIO) -> None:
        file.close()
        self._file = None
        path = self.folder / self._name
        (self.folder / (self._name + IN_PROGRESS)).rename(path)
        try:
            write_index(path)
        except Exception:  # the WARC file is whole without its index, which can be made again
            logger.exception("Could not index %s", path)

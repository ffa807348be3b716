"""A process's WARC files on disk: a warcinfo record first in each, rotation past the size limit,
the final name and the CDXJ index once a file is closed, every record where its writer said;
and the same from the writer's thread. Checked with warcio's own checker and reader."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

from warcio.archiveiterator import ArchiveIterator
from warcio.checker import Checker

from crawler.warc import Archived
from crawler.warc.exchange import Exchange
from crawler.warc.files import WarcFiles
from crawler.warc.writer import WarcWriter

START = datetime(2026, 5, 4, 3, 2, 1, tzinfo=UTC)


class Clock:
    """Opening times a millisecond apart, so that file names differ by their time too."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


def _exchange(n: int, payload: bytes = b"") -> Exchange:
    return Exchange(
        url=f"http://example.com/{n}",
        method="GET",
        target=f"/{n}",
        request_headers=[("Host", "example.com")],
        request_body=b"",
        protocol="HTTP/1.1",
        status=200,
        response_headers=[("Content-Type", "text/html")],
        payload=payload or f"<html>page {n}</html>".encode(),
        date=START,
    )


def _files(folder: Path, max_size: int = 1_000_000) -> WarcFiles:
    return WarcFiles(folder, "crawler", "host:42:job", max_size, {"software": "crawler"}, clock=Clock())


def _record_at(path: Path, offset: int) -> tuple[str, str]:
    with path.open("rb") as stream:
        stream.seek(offset)
        record = next(iter(ArchiveIterator(stream)))
        return record.rec_type, record.rec_headers.get_header("WARC-Target-URI")


def _check(paths: list[Path]) -> int:
    """``warcio check``'s exit status."""
    return Checker(SimpleNamespace(inputs=[str(p) for p in paths], verbose=False)).process_all()


def test_records_go_where_the_writer_says_and_files_rotate_past_the_limit(tmp_path: Path) -> None:
    files = _files(tmp_path, max_size=3000)
    archived = [files.fetch(_exchange(n, payload=bytes(range(256)) * 4)) for n in range(12)]
    files.close()

    warcs = sorted(tmp_path.glob("*.warc.gz"))
    assert len(warcs) > 2 and not list(tmp_path.glob("*.open"))
    assert _check(warcs) == 0
    assert [w.name for w in warcs] == sorted({a.filename for a in archived})
    for number, warc in enumerate(warcs):
        assert warc.name.startswith("crawler-20260504030201") and warc.name.endswith(
            f"-{number:05d}-host-42-job.warc.gz"
        )
        assert warc.stat().st_size < 3000 + 2000  # closed by the fetch that passed the limit
        with warc.open("rb") as stream:
            first = next(iter(ArchiveIterator(stream)))
        assert (first.rec_type, first.rec_headers.get_header("WARC-Filename")) == ("warcinfo", warc.name)
    for n, where in enumerate(archived):
        assert _record_at(tmp_path / where.filename, where.offset) == ("response", f"http://example.com/{n}")


def test_a_closed_file_gets_its_cdxj_index_beside_it(tmp_path: Path) -> None:
    files = _files(tmp_path)
    archived = [files.fetch(_exchange(n)) for n in range(3)]
    files.outlinks("http://example.com/0", archived[0].record_id, json.dumps(["http://example.com/1"]), START)
    files.close()

    (warc,) = tmp_path.glob("*.warc.gz")
    index = tmp_path / warc.name.replace(".warc.gz", ".cdxj")
    lines = index.read_text().splitlines()
    assert lines == sorted(lines) and len(lines) == 3  # responses only: requests and metadata are not replayed
    for n, (line, where) in enumerate(zip(lines, archived)):
        key, timestamp, fields = line.split(" ", 2)
        entry = json.loads(fields)
        assert (key, timestamp, entry["url"]) == (f"com,example)/{n}", "20260504030201", f"http://example.com/{n}")
        assert (entry["filename"], int(entry["offset"])) == (where.filename, where.offset)
        assert entry["digest"] == where.payload_digest
    assert dict(files.written) == {
        "warcinfo": 1,
        "response": 3,
        "request": 3,
        "metadata": 1,
        "files": 1,
        "bytes": warc.stat().st_size,
    }


def test_the_file_being_written_is_marked_open_and_a_process_without_fetches_writes_none(tmp_path: Path) -> None:
    files = _files(tmp_path)
    files.close()
    assert list(tmp_path.iterdir()) == []

    archived = files.fetch(_exchange(1))
    (open_file,) = tmp_path.iterdir()
    assert open_file.name == archived.filename + ".open"
    assert _record_at(open_file, archived.offset)[0] == "response"  # flushed: readable before the close
    files.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [archived.filename, archived.filename.replace(".warc.gz", ".cdxj")]
    )


def test_the_writer_thread_keeps_the_order_of_the_fetches(tmp_path: Path) -> None:
    files = _files(tmp_path)
    writer = WarcWriter(files)

    async def archive() -> list[Archived]:
        fetched = await asyncio.gather(*(writer.fetch(_exchange(n)) for n in range(20)))
        await writer.close()
        return list(fetched)

    archived = asyncio.run(archive())
    offsets = [a.offset for a in archived]
    assert offsets == sorted(offsets) and len(set(offsets)) == 20
    (warc,) = tmp_path.glob("*.warc.gz")
    assert _check([warc]) == 0

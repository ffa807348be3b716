"""Crawls with ``CRAWLER_WARC_DIR``, read back with warcio and replayed by a real pywb: every
answer that came off the wire is a response (or revisit) record with its request record,
robots.txt's included; a re-crawl against nginx archives its 304s as revisits; pywb replays a
gzip-served page with the bytes nginx served; rows say where their copy is; the processes of a
shared crawl write a file set each."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawler.warc.records import IDENTICAL_PAYLOAD, NOT_MODIFIED
from tests.conftest import REDIS_URL
from tests.helpers import Database, crawl, finish_all, start_crawl
from tests.nginx import Nginx
from tests.pywb import Pywb
from tests.testweb import TestWeb

pytestmark = pytest.mark.integration

PAGES = 8
WARCIO = Path(sys.executable).parent / "warcio"


@dataclass(frozen=True, slots=True)
class Record:
    file: str
    offset: int
    type: str
    url: str
    id: str
    date: str
    status: int | None
    profile: str | None
    digest: str | None
    concurrent_to: str | None
    payload: bytes

    @property
    def path(self) -> str:
        parts = urlsplit(self.url)
        return parts.path + (f"?{parts.query}" if parts.query else "")

    @property
    def timestamp(self) -> str:
        return re.sub(r"\D", "", self.date)[:14]


def _records(folder: Path, pattern: str = "*.warc.gz") -> list[Record]:
    found = []
    for warc in sorted(folder.glob(pattern)):
        with warc.open("rb") as stream:
            records = ArchiveIterator(stream)
            for record in records:
                header = record.rec_headers.get_header
                http = record.http_headers
                payload = record.raw_stream.read()  # before the offset, which reads past the record
                found.append(
                    Record(
                        file=warc.name,
                        offset=records.get_record_offset(),
                        type=record.rec_type,
                        url=header("WARC-Target-URI") or "",
                        id=header("WARC-Record-ID"),
                        date=header("WARC-Date"),
                        status=int(http.get_statuscode()) if http and record.rec_type != "request" else None,
                        profile=header("WARC-Profile"),
                        digest=header("WARC-Payload-Digest"),
                        concurrent_to=header("WARC-Concurrent-To"),
                        payload=payload,
                    )
                )
    return found


def _checked(folder: Path) -> list[Path]:
    """The folder's WARC files, all closed, each passing ``warcio check`` with its index beside it."""
    warcs = sorted(folder.glob("*.warc.gz"))
    assert warcs and not list(folder.glob("*.open"))
    check = subprocess.run([WARCIO, "check", *map(str, warcs)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    for warc in warcs:
        assert warc.with_name(warc.name.replace(".warc.gz", ".cdxj")).stat().st_size > 0
    return warcs


def _answers(records: list[Record]) -> list[Record]:
    return [r for r in records if r.type in ("response", "revisit")]


def _each_answer_has_its_request(records: list[Record]) -> None:
    requests = Counter(r.concurrent_to for r in records if r.type == "request")
    assert requests == Counter(r.id for r in _answers(records))


def _record_of(folder: Path, row: dict) -> Record:
    (record,) = [r for r in _records(folder, row["warc_filename"]) if r.offset == row["warc_offset"]]
    return record


def _rows(database: Database) -> dict[str, dict]:
    columns = [
        "url",
        "status",
        "http_status",
        "final_url",
        "links",
        "warc_filename",
        "warc_offset",
        "warc_payload_digest",
    ]
    followed = database.query(f"SELECT {', '.join(columns)}, followed_links FROM pages")
    return {row[0]: dict(zip(columns, row)) | {"followed": row[-1] or row[4]} for row in followed}


def test_every_answer_of_a_crawl_is_archived_as_it_came(web: TestWeb, tmp_path: Path) -> None:
    web.clear()
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    folder = tmp_path / "warc"
    crawl("links", database, url=web.url("links"), settings={"CRAWLER_WARC_DIR": str(folder)})
    served = web.log("links")
    _checked(folder)
    records = _records(folder)

    # /big announces more than DOWNLOAD_MAXSIZE: the crawler drops it before reading its body.
    assert Counter((r.path, r.status) for r in _answers(records)) == Counter(
        (entry.path, entry.status) for entry in served if entry.path != "/big"
    )
    assert ("/robots.txt", 200) in {(r.path, r.status) for r in _answers(records)}
    assert Counter(r.status for r in _answers(records))[500] == 6  # a retried answer is archived each time
    _each_answer_has_its_request(records)
    bomb = next(r for r in records if r.path == "/gzip-bomb" and r.type == "response")
    assert bomb.payload.startswith(b"\x1f\x8b") and len(bomb.payload) < 100_000  # as sent, never inflated

    rows = _rows(database)
    fetched = [row for row in rows.values() if row["status"] == "fetched"]
    assert len(fetched) > 20
    for row in fetched:
        record = _record_of(folder, row)
        assert (record.type, record.url, record.status) == ("response", row["final_url"], row["http_status"])
        assert record.digest == row["warc_payload_digest"]
    home = rows[web.url("links")]
    outlinks = [r for r in records if r.type == "metadata" and r.concurrent_to == _record_of(folder, home).id]
    assert [line.removeprefix(b"outlink: ").decode() for line in outlinks[0].payload.splitlines()] == json.loads(
        home["followed"]
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nginx]:
    with Nginx(tmp_path_factory.mktemp("nginx"), address="127.0.0.92", gzip=True) as server:
        (server.root / "robots.txt").write_text("User-agent: *\nDisallow:\n")
        links = "".join(f'<a href="/p{n}.html">page {n}</a> ' for n in range(PAGES))
        (server.root / "index.html").write_text(f"<html><head><title>Home</title></head><body>{links}</body></html>")
        for n in range(PAGES):
            words = " ".join(f"word{(n * 31 + i) % 997}" for i in range(600))
            (server.root / f"p{n}.html").write_text(
                f"<!DOCTYPE html><html><head><title>Page {n}</title></head><body><p>{words}</p>{links}</body></html>"
            )
        yield server


def _touch(path: Path) -> None:
    later = path.stat().st_mtime + 100  # a new Last-Modified and ETag even within the same second
    os.utime(path, (later, later))


def test_a_recrawl_archives_revisits_and_pywb_replays_the_bytes_served(site: Nginx, tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'crawler.db'}")
    folder = tmp_path / "warc"
    settings = {"CRAWLER_WARC_DIR": str(folder), "CRAWLER_RECRAWL_MIN_INTERVAL": "0"}
    crawl("links", database, url=site.url, job_id="first", settings=settings)
    first_served = site.log()
    first_rows = _rows(database)
    changed, same = site.root / "p1.html", site.root / "p2.html"
    changed.write_text(changed.read_text().replace("<p>", "<p>This text is new. "))
    _touch(changed)
    _touch(same)  # served in full again, byte for byte the same
    time.sleep(1)  # the runs' captures a second apart: replay addresses them by the second
    crawl("links", database, url=site.url, job_id="second", settings=settings)
    second_served = site.log()[len(first_served) :]
    _checked(folder)
    first, second = _records(folder, "*-first.warc.gz"), _records(folder, "*-second.warc.gz")

    assert Counter((r.path, r.status) for r in _answers(first)) == Counter((s.path, s.status) for s in first_served)
    assert {r.type for r in _answers(first)} == {"response"}
    assert Counter((r.path, r.status) for r in _answers(second)) == Counter((s.path, s.status) for s in second_served)
    not_modified = [s.path for s in second_served if s.status == 304]
    assert len(not_modified) == PAGES - 1  # every page but the two touched, home included
    assert sorted(r.path for r in second if r.profile == NOT_MODIFIED) == sorted(not_modified)
    assert [r.path for r in second if r.profile == IDENTICAL_PAYLOAD] == ["/p2.html"]
    assert [r.path for r in second if r.type == "response"] == ["/p1.html"]
    _each_answer_has_its_request(first + second)
    originals = {r.path: r for r in first if r.type == "response"}
    for revisit in (r for r in second if r.type == "revisit"):
        assert revisit.digest == originals[revisit.path].digest and revisit.payload == b""
    assert originals["/p0.html"].payload.startswith(b"\x1f\x8b")  # archived as nginx sent it: gzip

    # A row points to the record of the copy it holds: an unchanged page keeps the first one.
    rows = _rows(database)
    assert (rows[site.url + "p3.html"]["status"], rows[site.url + "p2.html"]["status"]) == ("unchanged", "unchanged")
    for path in ("p2.html", "p3.html"):
        assert rows[site.url + path]["warc_filename"] == first_rows[site.url + path]["warc_filename"]
        assert _record_of(folder, rows[site.url + path]) == originals["/" + path]
    assert _record_of(folder, rows[site.url + "p1.html"]).file.endswith("-second.warc.gz")

    pywb = Pywb(tmp_path / "pywb")
    pywb.collection("crawl", sorted(folder.glob("*.warc.gz")))
    pywb.collection_with_indexes("indexed", sorted(folder.glob("*.warc.gz")), sorted(folder.glob("*.cdxj")))
    revisited = next(r for r in second if r.path == "/p2.html")
    updated = next(r for r in second if r.path == "/p1.html")
    with pywb:
        for collection in ("crawl", "indexed"):
            original = originals["/p0.html"]
            status, headers, body = pywb.replay(collection, original.timestamp, original.url)
            assert status == 200 and "Content-Encoding" not in headers
            assert body == (site.root / "p0.html").read_bytes() == gzip.decompress(original.payload)
            assert pywb.replay(collection, revisited.timestamp, revisited.url)[2] == same.read_bytes()
            assert pywb.replay(collection, updated.timestamp, updated.url)[2] == changed.read_bytes()
            assert pywb.replay(collection, original.timestamp, site.url + "p1.html")[2] != changed.read_bytes()


def test_each_process_of_a_shared_crawl_writes_its_own_files(
    web: TestWeb, postgres_database: Database, crawl_name: str, tmp_path: Path
) -> None:
    web.clear()
    folder = tmp_path / "warc"
    settings = {
        "REDIS_URL": REDIS_URL,
        "CRAWLER_CRAWL_ID": crawl_name,
        "CRAWLER_IDLE_CLOSE_SECONDS": "3",
        "CRAWLER_WARC_DIR": str(folder),
    }
    logs = [tmp_path / f"worker-{n}.log" for n in range(2)]
    workers = [start_crawl("links", postgres_database, log, url=web.url("fast"), settings=settings) for log in logs]
    outputs = finish_all(workers, logs, timeout=240)
    for worker, output in zip(workers, outputs):
        assert worker.returncode == 0 and "Traceback" not in output, output[-5000:]
    _checked(folder)

    records = _records(folder)
    assert Counter(r.path for r in _answers(records)) == Counter(entry.path for entry in web.log("fast"))
    _each_answer_has_its_request(records)
    for worker, output in zip(workers, outputs):
        written = re.search(r"'warc/records/response': (\d+)", output)
        mine = [r for r in records if f"-{worker.pid}-" in r.file and r.type == "response"]
        assert len(mine) == (int(written.group(1)) if written else 0)

"""Re-crawls on the test web: only due pages are requested, conditionally; unchanged pages keep
their stored copy and their stored links carry discovery on; the budget counts downloads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers import Database, crawl
from tests.testweb import TestWeb

pytestmark = pytest.mark.integration

PAGES = "/p/"


def _downloads(web: TestWeb, site: str) -> list[str]:
    return [e.path for e in web.log(site) if e.path.startswith(PAGES) or e.path == "/"]


def _sqlite(tmp_path: Path) -> Database:
    return Database(f"sqlite:///{tmp_path / 'crawler.db'}")


def _stat(stderr: str, name: str) -> int:
    match = re.search(rf"'{re.escape(name)}': (\d+)", stderr)
    return int(match.group(1)) if match else 0


def test_budgeted_runs_move_on_through_the_site(
    web: TestWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = _sqlite(tmp_path)  # storage is not the subject here
    reached: set[str] = set()
    for run in range(5):
        web.clear()
        result = crawl("links", database, url=web.url("budgeted"), max_pages="30", job_id=f"run-{run}")
        downloads = _downloads(web, "budgeted")
        assert len(downloads) <= 30, (run, len(downloads))
        assert not reached.intersection(downloads), run  # nothing is fetched twice: not due yet
        assert _stat(result.stderr, "recrawl/not_due") == len(reached)
        assert (_stat(result.stderr, "recrawl/lookups") > 0) == (run > 0)  # a first crawl asks nothing
        reached.update(downloads)
        with capsys.disabled():
            print(f"\nbudgeted run {run + 1}: {len(downloads)} pages downloaded, {len(reached)} distinct so far")
    assert len(reached) >= 95, len(reached)
    rows = database.pages()
    kept = {url for url, row in rows.items() if row["status"] in ("fetched", "duplicate")}
    assert {web.url("budgeted", path) for path in reached} == kept
    # /p/0 is the home page under another URL, reached by a later run than the home page: its
    # twin all the same, found against the fingerprint the first run stored
    home_copy = web.url("budgeted", "/p/0")
    assert {url for url in kept if rows[url]["status"] == "duplicate"} == {home_copy}
    assert database.query("SELECT duplicate_of FROM pages WHERE url = ?", (home_copy,)) == [(web.url("budgeted"),)]


# Both stacks: the shared frontier's JSON codec must carry the stored validators and history.
def test_a_recrawl_asks_conditionally_and_keeps_unchanged_pages(
    web: TestWeb, database: Database, frontier: dict[str, str]
) -> None:
    web.clear()
    crawl("links", database, url=web.url("validated"), settings=frontier)
    first = database.pages()
    pages = {url for url, row in first.items() if row["status"] in ("fetched", "duplicate")}
    assert len(pages) == 31 and all(first[url]["etag"] for url in pages)
    assert first[web.url("validated", "/p/0")]["status"] == "duplicate"  # the home page under another URL

    web.clear()
    result = crawl(
        "links",
        database,
        url=web.url("validated"),
        max_pages="5",
        job_id="again",
        settings={**frontier, "CRAWLER_RECRAWL_MIN_INTERVAL": "0"},
    )
    answers = [e.status for e in web.log("validated") if e.path != "/robots.txt"]
    # every page was asked for again, and a 304 does not use the budget of 5 downloads
    assert sorted(answers) == [304] * 31, answers
    assert _stat(result.stderr, "recrawl/conditional_requests") == 31
    second = database.pages()
    for url in pages:
        row = second[url]
        assert (row["status"], row["http_status"], row["job_id"]) == ("unchanged", 304, "again")
        for column in ("title", "text", "body", "links", "content_hash", "etag"):
            assert row[column] == first[url][column], (url, column)
    ((visits, changes),) = {
        tuple(r) for r in database.query("SELECT visit_count, change_count FROM pages WHERE status = 'unchanged'")
    }
    assert (visits, changes) == (1, 0)


def test_pages_not_due_are_not_requested_and_their_stored_links_are_followed(web: TestWeb, tmp_path: Path) -> None:
    database = _sqlite(tmp_path)
    web.clear()
    crawl("links", database, url=web.url("validated"), max_pages="10")
    known = {url for url, row in database.pages().items() if row["status"] in ("fetched", "duplicate")}
    web.clear()
    result = crawl("links", database, url=web.url("validated"), job_id="later")
    requested = {web.url("validated", path) for path in _downloads(web, "validated")}
    assert not requested & known
    assert len(requested) == 31 - len(known)  # the rest of the site, reached through the stored links
    assert _stat(result.stderr, "recrawl/not_due") == len(known)
    rows = database.pages()
    assert {rows[url]["job_id"] for url in known} != {"later"}  # no new row for a page not due
    for url in known:
        links = json.loads(rows[url]["links"])
        assert links and rows[url]["text"]
    # by default only refusals are written (/private/page, linked from the home page)
    assert {bool(allowed) for (allowed,) in database.query("SELECT allowed FROM robots_decisions")} == {False}


def test_stored_links_are_the_followed_ones(web: TestWeb, tmp_path: Path) -> None:
    database = _sqlite(tmp_path)
    crawl("links", database, url=web.url("links"), max_depth="1")
    (home,) = [row for url, row in database.pages().items() if url == web.url("links")]
    assert web.url("links", "/nofollow-target") in json.loads(home["links"])
    web.clear()
    result = crawl("links", database, url=web.url("links"), max_depth="1", job_id="later")
    assert _stat(result.stderr, "recrawl/not_due") > 10
    # the home page is not due: what it links to comes from storage, without rel=nofollow links
    assert "/nofollow-target" not in {e.path for e in web.log("links")}

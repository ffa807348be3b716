"""The links spider on the local test web, asserted from the rows and the server's own log;
the main ones with the frontier in the process and shared through Redis."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.helpers import Database, crawl
from tests.testweb import TestWeb
from tests.testweb.sites import LinksSite

pytestmark = pytest.mark.integration


def _crawl_links(
    web: TestWeb, database: Database, settings: dict[str, str] | None = None, **arguments: str
) -> dict[str, dict]:
    web.clear()
    crawl("links", database, url=web.url("links"), settings=settings, **arguments)
    return {url.removeprefix(web.base("links")): row for url, row in database.pages().items()}


def _fetched_paths(web: TestWeb) -> list[str]:
    return [entry.path for entry in web.log("links") if entry.path != "/robots.txt"]


def test_reaches_every_page_within_depth_and_fetches_none_twice(
    web: TestWeb, database: Database, frontier: dict[str, str]
) -> None:
    rows = _crawl_links(web, database, max_depth="3", settings=frontier)
    fetched = _fetched_paths(web)
    answered = [e.path for e in web.log("links") if e.status < 500 and e.path != "/robots.txt"]  # 5xx are retried
    assert [path for path, n in Counter(answered).items() if n > 1] == []
    sections = {f"/section/{i}" for i in range(LinksSite.SECTIONS)}
    pages = {f"/section/{i}/page/{j}" for i in range(LinksSite.SECTIONS) for j in range(LinksSite.PAGES_PER_SECTION)}
    assert sections | pages <= rows.keys()
    assert {f"/chain/{n}" for n in range(1, 4)} <= rows.keys()
    assert "/chain/4" not in rows and "/chain/4" not in fetched
    assert {row["depth"] for row in rows.values()} == {0, 1, 2, 3}
    # every URL the server saw requested has its row
    assert {path.split("#")[0] for path in fetched} - {"/redirect-target", "/loop-b", "/loop-a"} <= rows.keys() | {
        "/duplicate?b=2&a=1&utm_source=news"
    }


def test_default_depth_limit_is_ten(web: TestWeb, database: Database) -> None:
    rows = _crawl_links(web, database)
    assert "/chain/10" in rows and "/chain/11" not in rows
    assert "/chain/11" not in _fetched_paths(web)


def test_nofollow_links_are_not_followed(web: TestWeb, database: Database) -> None:
    rows = _crawl_links(web, database)
    assert "/nofollow-target" not in rows
    assert "/nofollow-target" not in _fetched_paths(web)
    home = rows["/"]
    assert web.url("links", "/nofollow-target") in json.loads(home["links"])


def test_nofollow_can_be_ignored_by_setting(web: TestWeb, database: Database) -> None:
    web.clear()
    crawl("links", database, url=web.url("links"), settings={"CRAWLER_RESPECT_NOFOLLOW": "False"})
    assert web.url("links", "/only-from-nofollow") in database.pages()


def test_canonical_link_is_followed(web: TestWeb, database: Database) -> None:
    rows = _crawl_links(web, database)
    assert rows["/canonical-target"]["status"] == "fetched"
    assert "/canonical-target" in _fetched_paths(web)


def test_canonical_following_can_be_turned_off(web: TestWeb, database: Database) -> None:
    web.clear()
    crawl("links", database, url=web.url("links"), settings={"CRAWLER_FOLLOW_CANONICAL": "False"})
    assert web.url("links", "/canonical-target") not in database.pages()


def test_noindex_pages_are_kept_without_body_or_text_but_followed(web: TestWeb, database: Database) -> None:
    rows = _crawl_links(web, database)
    for path in ("/noindex-meta", "/noindex-header"):
        row = rows[path]
        assert row["status"] == "noindex" and row["noindex"]
        assert row["body"] is None and row["text"] is None
        assert row["http_status"] == 200
    assert rows["/noindex-meta"]["title"] == "Meta noindex"
    assert rows["/from-noindex"]["status"] == "fetched"


def test_row_contents_of_a_fetched_page(web: TestWeb, database: Database) -> None:
    rows = _crawl_links(web, database)
    home = rows["/"]
    assert home["status"] == "fetched" and home["http_status"] == 200
    assert home["title"] == "Home"
    assert "Welcome home" in home["text"] and "script text" not in home["text"]
    assert bytes(home["body"]).startswith(b"<!DOCTYPE html>")
    assert home["content_type"] == "text/html"
    assert home["content_length"] == len(bytes(home["body"]))
    assert len(home["content_hash"]) == 64 and len(home["url_hash"]) == 64
    assert home["surt_key"].endswith(")/")
    assert home["server_date"] is not None and home["crawl_duration_ms"] is not None
    assert home["discovered_via"] == "seed" and home["depth"] == 0
    links = json.loads(home["links"])
    assert home["links_count"] == len(links) == len(set(links))
    assert all(link.startswith("http://") for link in links)
    assert not any("utm_source" in link or "#" in link for link in links)


def test_duplicate_urls_collapse_to_one_normal_form(web: TestWeb, database: Database, frontier: dict[str, str]) -> None:
    rows = _crawl_links(web, database, settings=frontier)
    duplicates = [path for path in rows if path.startswith("/duplicate")]
    assert duplicates == ["/duplicate?a=1&b=2"]
    assert [p for p in _fetched_paths(web) if p.startswith("/duplicate")] == ["/duplicate?a=1&b=2"]


def test_every_outcome_is_a_row_with_its_reason(web: TestWeb, database: Database, frontier: dict[str, str]) -> None:
    rows = _crawl_links(web, database, settings=frontier)
    assert rows["/missing"]["status"] == "error" and rows["/missing"]["error"] == "HTTP 404"
    assert rows["/server-error"]["status"] == "error" and rows["/server-error"]["http_status"] == 500
    assert rows["/private/secret"]["status"] == "blocked_by_robots"
    assert "/private/secret" not in _fetched_paths(web)
    assert rows["/loop-a"]["status"] == "error" and rows["/loop-a"]["error"].startswith("redirect loop")
    assert rows["/big"]["status"] == "error" and "size limit" in rows["/big"]["error"]
    bomb = rows["/gzip-bomb"]  # Content-Encoding: gzip, 80 MiB once decompressed
    assert bomb["status"] == "error" and "DOWNLOAD_MAXSIZE" in bomb["error"]
    redirect = rows["/redirect"]
    assert redirect["status"] == "fetched" and redirect["redirect_count"] == 1
    assert redirect["final_url"] == web.url("links", "/redirect-target")
    image = rows["/image.png"]  # an extension never fetched: a row, and no request
    assert image["status"] == "filtered" and image["error"] == "extension .png not fetched"
    assert "/image.png" not in _fetched_paths(web)
    long = rows[LinksSite.LONG_PATH]  # past URLLENGTH_LIMIT: a row, and no request
    assert long["status"] == "filtered" and long["error"] == "URL longer than 2083 characters (URLLENGTH_LIMIT)"
    assert LinksSite.LONG_PATH not in _fetched_paths(web)


def test_a_seed_past_the_url_length_limit_is_a_row_and_no_request(web: TestWeb, database: Database) -> None:
    web.clear()
    crawl("links", database, url=web.url("links", LinksSite.LONG_PATH))
    row = database.pages()[web.url("links", LinksSite.LONG_PATH)]
    assert row["status"] == "filtered" and row["error"] == "URL longer than 2083 characters (URLLENGTH_LIMIT)"
    assert row["discovered_via"] == "seed"
    assert LinksSite.LONG_PATH not in _fetched_paths(web)


def test_a_refused_content_type_is_a_row_without_body(web: TestWeb, database: Database) -> None:
    rows = _crawl_links(web, database, settings={"CRAWLER_IGNORED_EXTENSIONS": ""})
    image = rows["/image.png"]  # requested, then stopped at its headers
    assert image["status"] == "filtered" and image["error"] == "content type image/png not accepted"
    assert image["body"] is None and image["http_status"] == 200 and image["content_length"] == 0
    assert "/image.png" in _fetched_paths(web)


def test_bad_input_pages_are_rows_and_the_crawl_goes_on(web: TestWeb, database: Database) -> None:
    rows = _crawl_links(web, database)
    assert rows["/latin1"]["title"] == "Café crème" and "Naïve façade" in rows["/latin1"]["text"]
    assert rows["/shift-jis"]["title"] == "日本語"
    assert rows["/malformed"]["status"] == "fetched"
    assert rows["/from-malformed"]["status"] == "fetched"  # a link inside broken markup
    assert rows["/bad-links"]["links_count"] == 1  # only /good-link is a valid http link
    assert rows["/good-link"]["status"] == "fetched"


def test_max_pages_counts_pages_fetched(web: TestWeb, database: Database) -> None:
    rows = _crawl_links(web, database, max_pages="7")
    downloaded = [row for row in rows.values() if row["status"] != "skipped"]
    assert len(downloaded) == 7
    assert len(_fetched_paths(web)) <= 7 + 2  # redirect hops are requests too
    # The URLs the budget kept from being requested are rows too, saying so.
    assert {row["error"] for row in rows.values() if row["status"] == "skipped"} == {
        "not fetched: the max_pages budget (7 downloads) was spent"
    }


def test_job_is_recorded(web: TestWeb, database: Database) -> None:
    web.clear()
    crawl("links", database, url=web.url("links"), job_id="job-42", max_depth="1")
    jobs = database.query(
        "SELECT id, spider, seeds, status, finish_reason, pages_fetched, rows_written FROM crawl_jobs"
    )
    assert len(jobs) == 1
    job_id, spider, seeds, status, reason, fetched, written = jobs[0]
    assert (job_id, spider, seeds, status, reason) == ("job-42", "links", web.url("links"), "finished", "finished")
    pages = database.pages()
    assert fetched == sum(1 for row in pages.values() if row["status"] in ("fetched", "noindex"))
    assert written == len(pages)
    assert {row["job_id"] for row in pages.values()} == {"job-42"}

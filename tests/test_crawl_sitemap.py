"""The sitemap spider in each sitemap situation of the local test web."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

import pytest

from tests.helpers import Database, crawl
from tests.testweb import TestWeb
from tests.testweb.sites import FallbackSitemapSite, IndexFallbackSite, SitemapQuirksSite, SitemapSite

pytestmark = pytest.mark.integration


def _crawl_sitemap(
    web: TestWeb,
    database: Database,
    label: str,
    path: str = "/",
    settings: dict[str, str] | None = None,
    **arguments: str,
) -> dict[str, dict]:
    web.clear()
    crawl("sitemap", database, url=web.url(label, path), settings=settings, **arguments)
    return {url.removeprefix(web.base(label)): row for url, row in database.pages().items()}


def _pages(rows: dict[str, dict]) -> set[str]:
    return {path for path, row in rows.items() if row["discovered_via"] in ("sitemap", "seed")}


def test_robots_sitemap_index_finds_exactly_the_listed_urls(
    web: TestWeb, database: Database, frontier: dict[str, str]
) -> None:
    # with a shared frontier too: discovery stays in its process, the pages are shared
    rows = _crawl_sitemap(web, database, "sitemaps", settings=frontier)
    assert _pages(rows) == set(SitemapSite.LISTED)
    assert all(rows[path]["status"] == "fetched" for path in SitemapSite.LISTED)
    log = web.log("sitemaps")
    requested = Counter(entry.path for entry in log if entry.path != "/robots.txt")
    assert set(requested) == set(SitemapSite.SITEMAPS) | set(SitemapSite.LISTED)
    assert max(requested.values()) == 1  # the self-listing index and the loop back to it are fetched once
    assert "/p/not-listed" not in requested


def test_every_sitemap_document_is_a_row(web: TestWeb, database: Database) -> None:
    rows = _crawl_sitemap(web, database, "sitemaps")
    assert rows["/maps/index.xml"]["status"] == "sitemap" and rows["/maps/index.xml"]["links_count"] == 7
    assert "index.xml': a sitemap already requested" in rows["/maps/index.xml"]["error"]  # it lists itself
    assert rows["/maps/pages-gzip.xml"]["links_count"] == 3  # gzip detected by content
    assert rows["/maps/deep.xml.gz"]["links_count"] == 2
    assert rows["/maps/pages.txt"]["links_count"] == 3
    assert rows["/maps/missing.xml"]["status"] == "error" and rows["/maps/missing.xml"]["error"] == "HTTP 404"
    assert "malformed XML" in rows["/maps/broken.xml"]["error"]
    assert "exa mple.com" in rows["/maps/pages.xml"]["error"]  # invalid URLs are named


def test_sitemap_metadata_is_stored(web: TestWeb, database: Database) -> None:
    rows = _crawl_sitemap(web, database, "sitemaps")
    row = rows["/p/xml-0"]
    assert row["sitemap_changefreq"] == "weekly" and row["sitemap_priority"] == 0.7
    lastmod = row["sitemap_lastmod"]
    lastmod = lastmod if isinstance(lastmod, datetime) else datetime.fromisoformat(lastmod)
    assert (lastmod.year, lastmod.month, lastmod.day) == (2024, 5, 1)
    entries = database.query("SELECT url, changefreq, sitemap_url FROM sitemap_entries")
    listed = {url.removeprefix(web.base("sitemaps")) for url, _, _ in entries}
    assert set(SitemapSite.LISTED) <= listed
    assert "http://offsite.invalid/elsewhere" in listed  # stored as listed, never fetched


def test_fallback_to_sitemap_xml(web: TestWeb, database: Database) -> None:
    rows = _crawl_sitemap(web, database, "fallback")
    assert _pages(rows) == set(FallbackSitemapSite.LISTED)


def test_fallback_to_sitemap_index_xml(web: TestWeb, database: Database) -> None:
    rows = _crawl_sitemap(web, database, "index-fallback")
    assert _pages(rows) == set(IndexFallbackSite.LISTED)


def test_without_any_sitemap_the_given_url_is_crawled(web: TestWeb, database: Database) -> None:
    rows = _crawl_sitemap(web, database, "no-sitemap", "/deep/page")
    assert _pages(rows) == {"/deep/page"}
    assert rows["/deep/page"]["status"] == "fetched"
    assert "/other" not in {entry.path for entry in web.log("no-sitemap")}


def test_every_seed_of_a_site_without_sitemaps_is_crawled(web: TestWeb, database: Database) -> None:
    # Both seeds share one robots.txt: the second seed's request for it is a duplicate.
    web.clear()
    crawl("sitemap", database, url=f"{web.url('no-sitemap')},{web.url('no-sitemap', '/deep/page')}")
    rows = {url.removeprefix(web.base("no-sitemap")): row for url, row in database.pages().items()}
    assert {path for path, row in rows.items() if row["status"] == "fetched"} == {"/", "/deep/page"}


@pytest.mark.parametrize("obey", ["True", "False"], ids=["rules-of-the-robots-service", "robots-not-obeyed"])
def test_a_site_map_line_is_read_as_search_engines_read_it(web: TestWeb, database: Database, obey: str) -> None:
    rows = _crawl_sitemap(web, database, "sitemap-quirks", settings={"ROBOTSTXT_OBEY": obey})
    assert rows["/maps/hyphenated.xml"]["status"] == "sitemap"
    assert set(SitemapQuirksSite.HYPHENATED_PAGES) <= _pages(rows)


def test_an_entry_cut_short_is_dropped_and_its_sitemap_row_says_so(web: TestWeb, database: Database) -> None:
    rows = _crawl_sitemap(web, database, "sitemap-quirks")
    assert set(SitemapQuirksSite.CUT_PAGES) <= _pages(rows)
    assert SitemapQuirksSite.CUT_SHORT not in rows
    assert SitemapQuirksSite.CUT_SHORT not in {entry.path for entry in web.log("sitemap-quirks")}
    cut = rows["/maps/cut.xml"]
    assert cut["status"] == "sitemap" and cut["links_count"] == len(SitemapQuirksSite.CUT_PAGES)
    assert "cut short" in cut["error"]


def test_discovery_ends_when_listed_sitemaps_are_duplicates_and_falls_back_to_the_seed(
    web: TestWeb, database: Database, frontier: dict[str, str]
) -> None:
    rows = _crawl_sitemap(web, database, "sitemap-loop", settings=frontier)
    requested = Counter(entry.path for entry in web.log("sitemap-loop"))
    assert requested["/maps/index.xml"] == 1  # not fetched again through the redirect back to it
    assert requested["/sitemap.xml"] == requested["/sitemap_index.xml"] == 1  # the fallback paths, then the seed
    assert rows["/"]["status"] == "fetched" and rows["/"]["discovered_via"] == "seed"
    robots = rows["/robots.txt"]
    assert robots["status"] == "filtered" and "already requested" in robots["error"]
    moved = rows["/maps/moved.xml"]
    assert moved["status"] == "redirect" and "already crawled" in moved["error"]


def test_sitemap_url_as_seed(web: TestWeb, database: Database) -> None:
    rows = _crawl_sitemap(web, database, "index-fallback", "/child.xml")
    assert _pages(rows) == set(IndexFallbackSite.LISTED)
    requested = {entry.path for entry in web.log("index-fallback")}
    assert "/sitemap.xml" not in requested and "/sitemap_index.xml" not in requested


def test_robots_url_as_seed(web: TestWeb, database: Database) -> None:
    rows = _crawl_sitemap(web, database, "sitemaps", "/robots.txt")
    assert _pages(rows) == set(SitemapSite.LISTED)


def test_several_seeds_as_a_comma_list(web: TestWeb, database: Database) -> None:
    web.clear()
    crawl("sitemap", database, url=f"{web.url('fallback')},{web.url('index-fallback')}")
    urls = set(database.pages())
    assert {web.url("fallback", p) for p in FallbackSitemapSite.LISTED} <= urls
    assert {web.url("index-fallback", p) for p in IndexFallbackSite.LISTED} <= urls


def test_seeds_file(web: TestWeb, database: Database, tmp_path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"# two sites\n{web.url('fallback')}\n\n{web.url('index-fallback')}\n")
    web.clear()
    crawl("sitemap", database, seeds_file=str(seeds))
    assert {web.url("index-fallback", p) for p in IndexFallbackSite.LISTED} <= set(database.pages())


def test_hostile_sitemaps_are_error_rows_and_nothing_is_expanded(web: TestWeb, database: Database) -> None:
    rows = _crawl_sitemap(web, database, "hostile")
    bomb = rows["/bomb.xml.gz"]
    assert bomb["status"] == "error" and "exceeded" in bomb["error"]
    assert rows["/safe"]["status"] == "fetched"
    requested = [entry.path for entry in web.log("hostile")]
    assert not any("root:" in path or "haha" in path for path in requested)
    assert all(len(path) < 100 for path in requested)

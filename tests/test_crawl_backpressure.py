"""Backpressure on real crawls of the link-heavy site (every page links to 200 others): the
URLs a page may not add to the frontier, for the site's rate or the domain's cap, are
``skipped`` rows saying why, in one process and in a crawl shared through Redis."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import Database, crawl
from tests.testweb import TestWeb

pytestmark = pytest.mark.integration

COLUMNS = ("url", "status", "error", "referrer")


def _rows(database: Database) -> list[dict[str, Any]]:
    return [dict(zip(COLUMNS, row)) for row in database.query(f"SELECT {', '.join(COLUMNS)} FROM pages")]


def _requested(web: TestWeb) -> set[str]:
    return {entry.path for entry in web.log("heavy") if entry.path != "/robots.txt"}


def test_a_site_adds_new_urls_at_its_rate_and_the_rest_are_skipped(
    web: TestWeb, database: Database, frontier: dict[str, str]
) -> None:
    web.clear()
    # a burst of 5, then one URL in 1,000 s: the crawl adds the home page's first five links
    settings = {**frontier, "CRAWLER_INGEST_RATE_PER_SITE": "0.001", "CRAWLER_INGEST_BURST_PER_SITE": "5"}
    home = web.url("heavy")
    crawl("links", database, url=home, settings=settings)
    rows = _rows(database)
    site = home.split("/")[2]
    why = f"backpressure: the pages of {site} add at most 0.001 new URLs a second (5 at once)"
    from_home = [row for row in rows if row["referrer"] == home]
    admitted = {row["url"] for row in from_home if row["status"] != "skipped"}
    assert admitted == {web.url("heavy", f"/doc/{n}") for n in range(5)}  # the page's order: one priority
    skipped = [row for row in rows if row["status"] == "skipped"]
    assert len(skipped) > 100 and all(row["error"] == why for row in skipped)
    assert {row["status"] for row in rows} == {"fetched", "duplicate", "skipped"}  # /doc/0 is the home page
    assert _requested(web) == {"/", *(f"/doc/{n}" for n in range(5))}


def test_the_frontier_of_a_domain_holds_at_most_its_cap_and_the_rest_are_skipped(
    web: TestWeb, database: Database, frontier: dict[str, str]
) -> None:
    web.clear()
    settings = {**frontier, "CRAWLER_FRONTIER_MAX_PER_DOMAIN": "3", "CRAWLER_INGEST_RATE_PER_SITE": "0"}
    home = web.url("heavy")
    crawl("links", database, url=home, settings=settings)
    rows = _rows(database)
    domain = home.split("/")[2]
    why = f"backpressure: the frontier holds 3 URLs of {domain} at most"
    from_home = [row for row in rows if row["referrer"] == home]
    admitted = {row["url"] for row in from_home if row["status"] != "skipped"}
    assert admitted == {web.url("heavy", f"/doc/{n}") for n in range(3)}  # the page's order: one priority
    skipped = [row for row in rows if row["status"] == "skipped"]
    assert len(skipped) > 100 and all(row["error"] == why for row in skipped)
    assert {row["status"] for row in rows} == {"fetched", "duplicate", "skipped"}
    # more pages than the cap were fetched, as the frontier emptied; none of the skipped
    fetched = {row["url"].removeprefix(home[:-1]) for row in rows if row["status"] != "skipped"}
    assert len(fetched) > 4 and _requested(web) == fetched

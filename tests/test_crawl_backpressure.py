"""Backpressure on real crawls of the link-heavy site (every page links to 200 others): the
URLs a page may not add to the frontier, for the site's rate or the domain's cap, are
``skipped`` rows saying why, in one process and in a crawl shared through Redis."""

from __future__ import annotations

import pytest

from tests.helpers import Database, crawl
from tests.testweb import TestWeb

pytestmark = pytest.mark.integration

COLUMNS = ("url", "status", "error", "referrer")


LIMITS = {
    # a burst of 5, then one URL in 1,000 s: the home page's first five links, and no more
    "rate": (
        {"CRAWLER_INGEST_RATE_PER_SITE": "0.001", "CRAWLER_INGEST_BURST_PER_SITE": "5"},
        5,
        "backpressure: the pages of {host} add at most 0.001 new URLs a second (5 at once)",
    ),
    # three queued at most: more pages are added as the frontier empties
    "frontier cap": (
        {"CRAWLER_FRONTIER_MAX_PER_DOMAIN": "3", "CRAWLER_INGEST_RATE_PER_SITE": "0"},
        3,
        "backpressure: the frontier holds 3 URLs of {host} at most",
    ),
}


@pytest.mark.parametrize("limit", list(LIMITS))
def test_the_new_urls_a_page_may_not_add_are_skipped_rows_saying_which_limit(
    web: TestWeb, database: Database, frontier: dict[str, str], limit: str
) -> None:
    settings, first_links, why = LIMITS[limit]
    web.clear()
    home = web.url("heavy")
    crawl("links", database, url=home, settings={**frontier, **settings})
    rows = [dict(zip(COLUMNS, row)) for row in database.query(f"SELECT {', '.join(COLUMNS)} FROM pages")]
    # the home page's first links went to the frontier (one priority: the page's order)
    from_home = [row for row in rows if row["referrer"] == home]
    first = {f"/doc/{n}" for n in range(first_links)}
    assert {row["url"] for row in from_home if row["status"] != "skipped"} == {web.url("heavy", path) for path in first}
    skipped = [row for row in rows if row["status"] == "skipped"]
    assert len(skipped) > 100 and all(row["error"] == why.format(host=home.split("/")[2]) for row in skipped)
    assert {row["status"] for row in rows} == {"fetched", "duplicate", "skipped"}  # /doc/0 is the home page
    requested = {entry.path for entry in web.log("heavy") if entry.path != "/robots.txt"}
    assert requested == {row["url"].removeprefix(home[:-1]) for row in rows if row["status"] != "skipped"}
    if limit == "rate":
        assert requested == {"/", *first}
    else:
        assert len(requested) > 1 + first_links

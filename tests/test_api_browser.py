"""The dashboard in headless Chromium (Debian's package, driven by Playwright): the login form
as a user and as an admin, the domain table, admin controls for admins only, pausing a domain,
and no error in the page. A screenshot of the admin's dashboard is saved in the test's folder
and in tests/output/."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.api_contract import FAST_HOST, THROTTLED_HOST, populate_as_a_crawl
from tests.api_server import ServeProcess, create_users, migrate
from tests.browser import OUTPUT, PageErrors, log_in
from tests.conftest import _fresh_database
from tests.helpers import Database

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, Database]]:
    folder = tmp_path_factory.mktemp("browser")
    with _fresh_database("postgresql", folder) as database:
        migrate(database)
        create_users(database)
        served = ServeProcess(database, folder / "serve.log")
        populate_as_a_crawl(database, datetime.now(UTC))  # once serving: the samples' minutes are the latest ones
        try:
            yield served, database
        finally:
            served.stop()


def _log_in(browser: Browser, server: ServeProcess, username: str) -> tuple[Page, PageErrors]:
    page, errors = log_in(browser, server, username)
    for host in (FAST_HOST, THROTTLED_HOST):
        expect(page.locator(f'#domains tr[data-domain="{host}"]')).to_be_visible(timeout=10_000)
    return page, errors


def test_a_user_sees_the_domains_and_no_admin_controls(server: tuple[ServeProcess, Database], browser: Browser) -> None:
    page, errors = _log_in(browser, server[0], "viewer")
    expect(page.locator("#admin")).to_be_hidden()
    expect(page.locator("#domains button.pause")).to_have_count(0)
    expect(page.locator("#rate")).not_to_have_text("–")
    throttled = page.locator(f'#domains tr[data-domain="{THROTTLED_HOST}"]')
    expect(throttled).to_have_class("blocked")
    page.click('#domains th[data-sort="responses_429"]')
    expect(page.locator("#domains tbody tr").first).to_have_attribute("data-domain", THROTTLED_HOST)
    throttled.locator("a.domain").click()
    expect(page.locator("#detail-robots")).to_contain_text("Disallow: /private")
    expect(page.locator("#detail-errors tr").first).to_contain_text("HTTP 500")
    assert errors.found == []
    page.close()


def test_an_admin_sees_the_controls_and_pauses_a_domain(
    server: tuple[ServeProcess, Database], browser: Browser, tmp_path: Path
) -> None:
    served, database = server
    page, errors = _log_in(browser, served, "admin")
    expect(page.locator("#admin")).to_be_visible()
    expect(page.locator("#alerts")).to_contain_text("worker_crash: worker w-silent")
    row = page.locator(f'#domains tr[data-domain="{FAST_HOST}"]')
    row.locator("button.pause").click()
    expect(row).to_have_class("paused", timeout=10_000)
    assert [
        bool(p) for (p,) in database.query("SELECT paused FROM domain_controls WHERE domain = ?", (FAST_HOST,))
    ] == [True]
    assert database.query("SELECT username, action, target FROM admin_actions") == [
        ("admin", "domain.pause", FAST_HOST)
    ]
    page.wait_for_timeout(500)  # the chart's next frame
    shot = tmp_path / "dashboard-admin.png"
    page.screenshot(path=str(shot), full_page=True)
    OUTPUT.mkdir(exist_ok=True)
    shutil.copy(shot, OUTPUT / shot.name)
    print(f"screenshot: {shot} and {OUTPUT / shot.name}")
    assert errors.found == []
    page.close()

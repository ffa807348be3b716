"""The dashboard in headless Chromium (Debian's package, driven by Playwright): the login form
as a user and as an admin, the domain table, admin controls for admins only, pausing a domain,
and no error in the page (its Content-Security-Policy refuses inline scripts and styles: any
left would be console errors). A screenshot of the admin's dashboard is saved in the test's
folder and in tests/output/. A page of another port of the same host, open beside the admin's
dashboard, can change nothing."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


ATTACK = """<!doctype html>
<form id="form" method="POST" action="{api}/api/frontier/seed">
  <input name="urls" value="http://127.0.0.11:8001/forged">
</form>
<script>
fetch("{api}/api/domains/*/pause", {{method: "POST", mode: "no-cors", credentials: "include", body: "x"}})
  .finally(() => document.getElementById("form").submit());
</script>
"""


@contextmanager
def page_server(html: str) -> Iterator[str]:
    """A tiny server of one page on another port of 127.0.0.1: the same site as the API."""

    class OnePage(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), OnePage)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_page_of_another_port_cannot_seed_nor_pause_with_the_admins_session(
    server: tuple[ServeProcess, Database], browser: Browser
) -> None:
    served, database = server
    page, errors = _log_in(browser, served, "admin")
    assert errors.found == []
    with page_server(ATTACK.format(api=served.url)) as attack_url:
        with (  # the logged-in admin follows a link to the other port
            page.expect_request(lambda r: r.url.endswith("/api/domains/*/pause")) as paused,
            page.expect_response(lambda r: r.url.endswith("/api/frontier/seed")) as seeded,
        ):
            page.goto(attack_url)
        assert seeded.value.status == 403
        assert "crawler_session=" in (seeded.value.request.header_value("cookie") or "")  # the cookie went along
        assert paused.value.method == "POST"
    # The fetch's answer never reaches the page (Cross-Origin-Resource-Policy): the server says it refused.
    assert "POST /api/domains/*/pause from 127.0.0.1 refused" in served.log.read_text()
    assert database.query("SELECT url FROM frontier_inbox WHERE url LIKE ?", ("%forged%",)) == []
    assert database.query("SELECT domain FROM domain_controls WHERE domain = '*'") == []
    assert (
        database.query(
            "SELECT action FROM admin_actions WHERE action IN ('frontier.seed', 'domain.pause') AND target IS DISTINCT FROM ?",
            (FAST_HOST,),
        )
        == []
    )
    page.close()

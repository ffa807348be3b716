"""The dashboard's browser for tests: Debian's Chromium, headless, driven by Playwright; logging
in as a user does; and what a page reports as an error."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import Browser, Page, Request, Response, expect, sync_playwright

from tests.api_server import PASSWORDS, ServeProcess
from tests.helpers import ROOT

OUTPUT = ROOT / "tests" / "output"
"""Where screenshots are kept for people to look at (not in git)."""


@contextmanager
def chromium() -> Iterator[Browser]:
    executable = shutil.which("chromium")
    assert executable, "Debian's chromium is not installed (scripts/debian.sh installs it)"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


class PageErrors:
    """Everything a page reports as an error from the moment it is watched: console errors
    (Chromium's "Failed to load resource" among them), uncaught exceptions, requests that failed
    and answers of 400 or more."""

    def __init__(self, page: Page):
        self.found: list[str] = []
        page.on("console", lambda message: message.type == "error" and self.found.append(f"console: {message.text}"))
        page.on("pageerror", lambda error: self.found.append(f"uncaught: {error}"))
        page.on("requestfailed", self._failed)
        page.on("response", self._answered)

    def _failed(self, request: Request) -> None:
        self.found.append(f"failed: {request.method} {request.url}: {request.failure}")

    def _answered(self, response: Response) -> None:
        if response.status >= 400:
            self.found.append(f"{response.status}: {response.request.method} {response.url}")


def log_in(browser: Browser, server: ServeProcess, username: str) -> tuple[Page, PageErrors]:
    """A new page of the dashboard, logged in as ``username``, watched for errors from its first request."""
    page = browser.new_page(viewport={"width": 1400, "height": 1300}, locale="en-US")  # numbers as 1,234
    errors = PageErrors(page)
    page.goto(server.url + "/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORDS[username])
    page.click("#login-form button[type=submit]")
    expect(page.locator("#who")).to_contain_text(username, timeout=10_000)
    return page, errors


def next_refresh(page: Page) -> None:
    """Wait for the dashboard's next refresh to be drawn (its header says when, to the second)."""
    updated = page.locator("#updated")
    expect(updated).not_to_have_text("", timeout=10_000)
    expect(updated).not_to_have_text(updated.text_content() or "", timeout=10_000)

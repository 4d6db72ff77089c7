"""Headless Chromium for browser tests: Debian's chromium driven by Python Playwright.

Playwright's own browser download cannot work here (no network), so the tests use the
system's chromium, with the flags that keep it from reaching out to the network.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
#: The two screens every journey is tried on (issue 19): a laptop and a phone.
SIZES: dict[str, tuple[int, int]] = {"desktop": (1366, 900), "mobile": (390, 844)}


def chromium_path() -> str:
    """Debian's chromium binary, or a skip saying how to install it."""
    for candidate in ("/usr/lib/chromium/chromium", "/usr/bin/chromium"):
        if Path(candidate).exists():
            return candidate
    found = shutil.which("chromium")
    if found is None:
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    return found


@contextmanager
def chromium() -> Iterator[Any]:
    """A launched headless Chromium (a playwright ``Browser``), closed afterwards."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    executable = chromium_path()
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


class Watched:
    """A page and what went wrong on it: console errors, uncaught exceptions, failed
    requests and 4xx/5xx answers (issue 19: a journey has none)."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.problems: list[str] = []
        page.on(
            "console",
            lambda msg: (
                self.problems.append(f"console: {msg.text}") if msg.type == "error" else None
            ),
        )
        page.on("pageerror", lambda error: self.problems.append(f"pageerror: {error}"))
        page.on("requestfailed", self._failed)
        page.on(
            "response",
            lambda response: (
                self.problems.append(f"{response.status}: {response.url}")
                if response.status >= 400
                else None
            ),
        )

    def _failed(self, request: Any) -> None:
        # ERR_ABORTED is the browser cancelling a request itself, as when a form post
        # navigates away before the favicon arrived; a server that fails answers 4xx/5xx
        # (watched below) or refuses the connection (another error).
        if request.failure != "net::ERR_ABORTED":
            self.problems.append(f"failed: {request.url} {request.failure}")

    def assert_clean(self, where: str = "") -> None:
        """Fail, listing them, if anything went wrong on the page so far."""
        if self.problems:
            place = where or self.page.url
            listed = "\n    ".join(self.problems)
            pytest.fail(f"Problems on {place}:\n    {listed}", pytrace=False)

    def overflow(self) -> int:
        """How many CSS pixels the page is wider than the window (0: no sideways scroll;
        a wide table scrolls in its own box, not the page)."""
        width: int = self.page.evaluate(
            "() => document.documentElement.scrollWidth - window.innerWidth"
        )
        return max(width, 0)


@contextmanager
def watched_page(browser: Any, width: int = 1366, height: int = 900) -> Iterator[Watched]:
    """A fresh browser context (its own cookies) and a watched page in it."""
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        yield Watched(context.new_page())
    finally:
        context.close()


@contextmanager
def page_at(browser: Any, size: str) -> Iterator[Watched]:
    """A watched page on one of :data:`SIZES` (``"desktop"`` or ``"mobile"``); a phone's
    context also reports touch, as a phone's browser does."""
    width, height = SIZES[size]
    context = browser.new_context(
        viewport={"width": width, "height": height}, has_touch=size == "mobile"
    )
    try:
        yield Watched(context.new_page())
    finally:
        context.close()


def visit_at_every_size(
    browser: Any, url: str, check: Callable[[Watched, str], None] | None = None
) -> None:
    """Load ``url`` at every size of :data:`SIZES`, run ``check(watched, size)`` there,
    and fail on a console error, a page error, a failed request or a 4xx/5xx answer."""
    for size in SIZES:
        with page_at(browser, size) as watched:
            watched.page.goto(url)
            watched.page.wait_for_load_state("networkidle")
            if check is not None:
                check(watched, size)
            watched.assert_clean(f"{url} at {size}")


def sign_in(page: Any, base_url: str, name: str, password: str, target: str) -> None:
    """Sign in through the login form and land on ``target`` (a path)."""
    page.goto(f"{base_url}/ui/login?next={target}")
    page.fill("input[name=name]", name)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"**{target}")

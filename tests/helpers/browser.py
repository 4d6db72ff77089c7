"""Headless Chromium for browser tests: Debian's chromium driven by Python Playwright.

Playwright's own browser download cannot work here (no network), so the tests use the
system's chromium, with the flags that keep it from reaching out to the network.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
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

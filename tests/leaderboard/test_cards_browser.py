"""In headless Chromium: a model card with an XSS attempt shows as text, and a snapshot's
permalink shows its citation and serves the frozen CSV."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.leaderboard.conftest import LiveServer
from tests.leaderboard.seeding import TASK

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ATTACK = (
    "## Training data\n"
    "<script>window.__pwned = 1</script>\n\n"
    '[innocent](javascript:window.__pwned=2) and <img src=x onerror="window.__pwned=3">\n\n'
    "See [the paper](https://example.org/paper)."
)


def test_the_card_renders_inert_and_the_snapshot_permalink_works(
    browser: Any, live_server: LiveServer
) -> None:
    seeded = live_server.seeded
    sid = seeded.submissions["minilm-head"]  # bob's
    edited = httpx.patch(
        f"{live_server.url}/submissions/{sid}/card",
        json={"card": ATTACK, "license": "apache-2.0"},
        headers={"Authorization": f"Bearer {seeded.tokens['bob']}"},
    )
    assert edited.status_code == 200, edited.text
    made = httpx.post(
        f"{live_server.url}/tasks/{TASK}/snapshots",
        json={"title": "browser check"},
        headers={"Authorization": f"Bearer {seeded.tokens['owner']}"},
    )
    assert made.status_code == 201, made.text
    snapshot = made.json()

    page = browser.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(f"{live_server.url}/ui/tasks/{TASK}/models/{sid}")
    card = page.locator("#model-card")
    assert card.locator("h2", has_text="Training data").count() == 1
    assert "<script>window.__pwned = 1</script>" in card.inner_text()
    assert card.locator("script, img").count() == 0
    link = card.locator("a", has_text="innocent")
    assert link.count() == 0  # a javascript: link stays text
    paper = card.locator("a", has_text="the paper")
    assert paper.get_attribute("href") == "https://example.org/paper"
    assert "noopener" in (paper.get_attribute("rel") or "")
    assert page.evaluate("window.__pwned === undefined") and not dialogs
    assert "apache-2.0" in card.inner_text()

    page.goto(snapshot["url"])
    assert page.locator("h1").inner_text() == f"Snapshot {snapshot['number']}: browser check"
    assert page.locator("#bibtex").inner_text().strip() == snapshot["citation"]
    names = page.eval_on_selector_all(
        "#snapshot-board tbody tr.model td:nth-child(3)", "cells => cells.map(c => c.innerText)"
    )
    assert any("minilm-head" in n for n in names)
    href = page.get_attribute("#snap-csv", "href")
    assert href is not None
    frozen = httpx.get(f"{live_server.url}{href}").content
    assert frozen == httpx.get(snapshot["csv_url"]).content
    assert snapshot["csv_sha256"] in page.content()
    page.close()

"""In headless Chromium: a large board's page shows new weights at once, then their intervals.

The server counts every board as large (``EVALBOARD_INTERVALS_INLINE_MODELS=1``), so the
page for a dataset weighting no one asked for before comes without its intervals and says
so; its script asks again until they are in.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.browser import ARTIFACTS
from tests.leaderboard.seeding import TASK

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_the_page_fills_in_the_intervals_it_was_sent_without(
    browser: Any, large_board_server: str
) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{large_board_server}/ui/tasks/{TASK}?dataset_weights=test:0.3")
    # Sent without them: the note says so, and no row has a rank interval yet.
    assert page.locator("#intervals-pending").count() == 1
    assert (
        page.locator("#board .rank-iv").all_inner_texts()
        == [""] * page.locator("#board .rank-iv").count()
    )
    page.wait_for_selector("#intervals-pending", state="detached", timeout=20_000)
    intervals = page.locator("#board tbody tr:not([data-kind=majority]) .rank-iv")
    assert intervals.count() >= 3
    assert all("–" in text for text in intervals.all_inner_texts())
    assert page.locator("#rank-announce").inner_text() == "Intervals computed."
    assert page.url.endswith("?dataset_weights=test%3A0.3")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "task-page-intervals-filled.png"), full_page=True)
    assert errors == []
    page.close()

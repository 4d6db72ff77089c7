"""The compare page and word attributions in headless Chromium against a real
``evalboard serve`` (local sandbox): pick models, land on the permalink, read the matrix
and the disagreements; write an example and see which words moved the target's answer,
in text as well as in colour; explain a drill-down example."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from evalboard.core.context import Context
from leaderboard.loop import open_round
from tests.conftest import make_settings
from tests.helpers.browser import ARTIFACTS, sign_in, watched_page
from tests.leaderboard.conftest import serve
from tests.loop.platform import Platform, build_platform

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PASSWORD = "correct-horse-battery"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Platform]]:
    """VADER and the keyword model evaluated on the static set; round 1 open with the
    keyword model as target; one ``evalboard serve`` for the module."""
    tmp = tmp_path_factory.mktemp("compare-browser")
    settings = make_settings(tmp)
    ctx = Context.from_settings(settings)
    platform = build_platform(ctx, tmp)
    open_round(ctx, "sentiment", submission_ids=[platform.submissions["keyword"]])
    try:
        with serve(settings.data_dir, tmp / "server.log") as (url, _):
            yield url, platform
    finally:
        ctx.db.dispose()


def test_a_viewer_picks_two_models_and_reads_where_they_disagree(
    server: tuple[str, Platform], browser: Any
) -> None:
    base, platform = server
    vader, keyword = platform.submissions["vader"], platform.submissions["keyword"]
    with watched_page(browser) as watched:
        page = watched.page
        page.goto(f"{base}/ui/tasks/sentiment/compare")
        page.check(f"input[name=m][value='{vader}']")
        page.check(f"input[name=m][value='{keyword}']")
        page.click("#compare-submit")
        page.wait_for_url(f"**/ui/tasks/sentiment/compare?models={vader},{keyword}")
        assert page.get_attribute("#permalink", "href").endswith(f"models={vader},{keyword}")
        matrix = page.inner_text("#compare-matrix")
        assert "board (weighted average)" in matrix and "static" in matrix and "Perf" in matrix
        # The best figure of a row is marked in text, not by colour alone.
        assert page.locator("#compare-matrix td.best [aria-label=best]").count() > 0
        rows = page.locator("#disagreements tbody tr")
        assert rows.count() >= 1
        # "A dreadful, boring film.": VADER says negative, the keyword model neutral.
        dreadful = page.locator("#disagreements tbody tr", has_text="A dreadful, boring film.")
        assert dreadful.count() == 1
        cells = dreadful.locator("td").all_inner_texts()
        assert cells[2] == "negative"  # the gold
        assert "negative" in cells[3] and "✓ right" in cells[3]
        assert "neutral" in cells[4] and "✗ wrong" in cells[4]
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "compare.png"), full_page=True)
        assert watched.problems == []


def test_an_annotator_sees_which_words_moved_the_targets_answer(
    server: tuple[str, Platform], browser: Any
) -> None:
    base, _ = server
    with watched_page(browser) as watched:
        page = watched.page
        sign_in(page, base, "alice", PASSWORD, "/ui/tasks/sentiment/collect")
        page.fill("#in_statement", "Oh great, the flight is delayed again.")
        page.select_option("#label", "negative")
        page.click("#submit-example")
        assert page.inner_text("#prediction") == "positive"
        # The attribution comes without a click, next to the prediction.
        page.wait_for_selector("#result .attribution[data-done]", timeout=30_000)
        panel = page.locator("#result .attribution")
        strong = panel.locator(".attr-word.attr-for")
        assert strong.count() == 1 and strong.inner_text().startswith("great,")
        # Its score is text a screen reader reads, and a tooltip; not colour only.
        assert "+0.55" in strong.locator(".visually-hidden").inner_text()
        assert "for “positive”" in (strong.get_attribute("title") or "")
        assert "great, +0.55 (for “positive”)" in panel.locator(".attr-top").inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "collect-attribution.png"), full_page=True)
        assert watched.problems == []


def test_a_drilldown_example_is_explained_on_a_click(
    server: tuple[str, Platform], browser: Any
) -> None:
    base, platform = server
    vader = platform.submissions["vader"]
    with watched_page(browser) as watched:
        page = watched.page
        sign_in(page, base, "rita", PASSWORD, f"/ui/tasks/sentiment/models/{vader}")
        row = page.locator("table.examples tbody tr", has_text="wonderful").first
        row.locator("[data-attribution-start]").click()
        row.locator(".attribution[data-done]").wait_for(timeout=30_000)
        top = row.locator(".attr-top").inner_text()
        assert "wonderful" in top and "loved" in top
        assert watched.problems == []

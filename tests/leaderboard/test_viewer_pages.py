"""A viewer's journey in headless Chromium (issue 19): reset to the owner's weights, a
favicon, contrast, a re-rank announced, an empty task, the model limits and round links.

Every page here is watched: a console error, a failed request or a 4xx/5xx answer fails
the test that loaded it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from datasets_registry import create_task
from scoring import WEIGHABLE_METRICS
from tests.helpers.browser import Watched, sign_in, watched_page
from tests.helpers.tasks import sentiment_spec
from tests.leaderboard.conftest import LiveServer
from tests.leaderboard.seeding import PASSWORD, TASK

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EMPTY_TASK = "sentiment-empty"


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    with watched_page(browser) as watched:
        yield watched


def _sliders(page: Any) -> dict[str, float]:
    values: dict[str, str] = page.eval_on_selector_all(
        "input[type=range][data-metric]",
        "els => Object.fromEntries(els.map(e => [e.dataset.metric, e.value]))",
    )
    return {name: float(value) for name, value in values.items()}


def test_reset_restores_the_owners_weights_and_cleans_the_url(
    watched: Watched, live_server: LiveServer
) -> None:
    owner = httpx.get(f"{live_server.url}/tasks/{TASK}").json()["default_weights"]
    page = watched.page
    page.goto(f"{live_server.url}/ui/tasks/{TASK}?weights=perf:0,throughput:10")
    shared = _sliders(page)
    assert shared["perf"] == 0 and shared["throughput"] == 10
    page.click("#reset-weights")
    page.wait_for_function("() => window.location.search === ''", timeout=5000)
    page.wait_for_load_state()
    assert _sliders(page) == {name: min(owner.get(name, 0.0), 10) for name in shared}
    # Moved and reset again on the plain page: back to the owner's, nothing in the URL.
    page.fill("#w-throughput", "7")
    page.wait_for_function("() => window.location.search.includes('weights=')")
    page.click("#reset-weights")
    page.wait_for_function("() => window.location.search === ''", timeout=5000)
    assert _sliders(page)["throughput"] == min(owner.get("throughput", 0.0), 10)
    assert watched.problems == []


def test_every_page_has_a_favicon(watched: Watched, live_server: LiveServer) -> None:
    page = watched.page
    page.goto(f"{live_server.url}/ui/tasks/{TASK}")
    icon = page.get_attribute("link[rel=icon]", "href")
    assert icon is not None
    assert httpx.get(f"{live_server.url}{icon}").status_code == 200
    # Pages that name no icon (the API docs, JSON) make the browser ask for /favicon.ico.
    answer = httpx.get(f"{live_server.url}/favicon.ico")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("image/")
    assert watched.problems == []


_CONTRAST = """
el => {
  const rgb = s => s.match(/[\\d.]+/g).map(Number);
  const background = node => {
    for (; node; node = node.parentElement) {
      const c = rgb(getComputedStyle(node).backgroundColor);
      if (c.length < 4 || c[3] > 0) return c;
    }
    return [255, 255, 255];
  };
  const lum = c => {
    const [r, g, b] = c.slice(0, 3).map(v => v / 255)
      .map(v => v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4));
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const a = lum(rgb(getComputedStyle(el).color)), b = lum(background(el));
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}
"""


def test_header_arrows_and_the_baseline_link_meet_aa_contrast(
    watched: Watched, live_server: LiveServer
) -> None:
    page = watched.page
    page.goto(f"{live_server.url}/ui/tasks/{TASK}")
    arrows = page.locator("#board thead .dir")
    assert arrows.count() >= 3
    for i in range(arrows.count()):
        assert arrows.nth(i).evaluate(_CONTRAST) >= 4.5
    baseline = page.locator("#board tr.baseline td.name a")
    assert baseline.count() == 1
    assert baseline.evaluate(_CONTRAST) >= 4.5
    assert watched.problems == []


def test_a_rerank_is_announced_to_screen_readers(watched: Watched, live_server: LiveServer) -> None:
    page = watched.page
    page.goto(f"{live_server.url}/ui/tasks/{TASK}")
    region = page.locator("[aria-live=polite]#rank-announce")
    assert region.count() == 1 and region.inner_text() == ""
    page.fill("#w-throughput", "10")
    page.wait_for_function("() => document.getElementById('rank-announce').textContent !== ''")
    # Every column stays under its header (the recomputed table is swapped in whole).
    header = page.locator("#board thead th", has_text="Dynascore").bounding_box()
    cell = page.locator("#board tbody tr td.ds").first.bounding_box()
    assert header is not None and cell is not None and abs(header["x"] - cell["x"]) < 1
    first = page.locator("#board tbody tr:not([data-kind=majority]) td.name a").first
    assert region.text_content() == (
        f"Re-ranked: {first.inner_text().strip()} is first, "
        f"Dynascore {page.locator('#board tbody tr .ds-value').first.inner_text()}. "
        "Intervals recomputed."
    )
    assert watched.problems == []


def test_an_empty_task_says_how_to_submit_and_shows_every_weight(
    watched: Watched, live_server: LiveServer
) -> None:
    create_task(
        live_server.seeded.ctx,
        sentiment_spec(id=EMPTY_TASK, name="Sentiment, nobody yet"),
        owner_id=None,
    )
    page = watched.page
    page.goto(f"{live_server.url}/ui/tasks/{EMPTY_TASK}")
    assert sorted(_sliders(page)) == sorted(WEIGHABLE_METRICS)
    empty = page.inner_text(".empty-state")
    assert f"evalboard model init --task {EMPTY_TASK}" in empty
    assert "evalboard model upload" in empty
    assert watched.problems == []


def test_the_task_page_lists_the_model_limits_and_links_rounds(
    watched: Watched, live_server: LiveServer
) -> None:
    limits = httpx.get(f"{live_server.url}/tasks/{TASK}").json()["limits"]
    page = watched.page
    page.goto(f"{live_server.url}/ui/tasks/{TASK}")
    shown = page.inner_text("#limits")
    assert limits["memory"] in shown and f"{limits['timeout_s']:.0f} s" in shown
    assert page.locator(f".task-links a[href='/ui/tasks/{TASK}/collect']").count() == 1
    assert page.locator(f".task-links a[href='/ui/tasks/{TASK}/rounds']").count() == 0
    sign_in(page, live_server.url, "owner", PASSWORD, f"/ui/tasks/{TASK}")
    page.click(".task-links >> text=Rounds")
    page.wait_for_url(f"**/ui/tasks/{TASK}/rounds")
    assert watched.problems == []

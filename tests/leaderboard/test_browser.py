"""In headless Chromium: sign in, move a weight slider, and see exactly the API's order."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.helpers.browser import ARTIFACTS
from tests.leaderboard.conftest import LiveServer
from tests.leaderboard.seeding import PASSWORD, TASK

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _api_order(server: LiveServer, weights: dict[str, float] | None = None) -> list[str]:
    params = {"weights": ",".join(f"{k}:{v:g}" for k, v in weights.items())} if weights else {}
    board = httpx.get(f"{server.url}/tasks/{TASK}/leaderboard", params=params).json()
    return [row["key"] for row in board["rows"] if row["rank"] is not None]


def _page_order(page: Any) -> list[str]:
    keys: list[str] = page.eval_on_selector_all(
        "#board tbody tr:not([data-kind=majority])", "rows => rows.map(r => r.dataset.key)"
    )
    return keys


def test_slider_reranks_to_the_apis_order(browser: Any, live_server: LiveServer) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    # The CSP allows scripts from this origin only: nothing on the pages may be refused.
    page.on(
        "console",
        lambda msg: errors.append(msg.text) if "Content Security Policy" in msg.text else None,
    )
    page.goto(f"{live_server.url}/ui/login?next=/ui/tasks/{TASK}")
    page.fill("input[name=name]", "alice")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"**/ui/tasks/{TASK}")
    assert page.locator(".who").inner_text() == "alice"

    before = _page_order(page)
    assert len(before) >= 3 and before == _api_order(live_server)
    weights = {
        m: float(page.input_value(f"#w-{m}"))
        for m in ("perf", "throughput", "memory", "fairness", "robustness")
    }
    weights["throughput"] = 10.0
    page.fill("#w-throughput", "10")
    expected = _api_order(live_server, weights)
    assert expected != before, "the seeded models should re-rank when speed matters"
    page.wait_for_function(
        "expected => Array.from(document.querySelectorAll("
        "'#board tbody tr:not([data-kind=majority])')).map(r => r.dataset.key).join() "
        "=== expected.join()",
        arg=expected,
        timeout=5000,
    )
    assert _page_order(page) == expected
    assert page.locator("#o-throughput").inner_text() == "10"
    assert "throughput%3A10" in page.get_attribute("#dl-csv", "href")
    page.screenshot(path=str(ARTIFACTS / "task-page.png"), full_page=True)

    phone = browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=2)
    phone.goto(f"{live_server.url}/ui/tasks/{TASK}")
    phone.screenshot(path=str(ARTIFACTS / "task-page-phone.png"), full_page=True)
    phone.close()

    page.click(f"#board tbody tr[data-key='{expected[0]}'] td.name a")
    page.wait_for_selector("#chart-pareto_memory .main-svg", timeout=15000)
    for chart in ("contributions", "datasets", "rounds", "pareto_throughput"):
        assert page.locator(f"#chart-{chart} .main-svg").count() >= 1, chart
    assert page.locator("table.examples tbody tr").count() == 25
    page.screenshot(path=str(ARTIFACTS / "model-page.png"), full_page=True)
    assert errors == []
    page.close()


def test_api_docs_render_offline(browser: Any, live_server: LiveServer) -> None:
    page = browser.new_page()
    elsewhere: list[str] = []
    page.on(
        "request",
        lambda request: (
            elsewhere.append(request.url)
            if not request.url.startswith((live_server.url, "data:", "blob:"))
            else None
        ),
    )
    page.goto(f"{live_server.url}/docs")
    page.wait_for_selector(".opblock", timeout=20_000)
    assert "/tasks/{task_id}/leaderboard" in page.content()
    assert elsewhere == [], "the docs page reached beyond this server"
    page.close()

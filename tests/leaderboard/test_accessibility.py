"""axe-core on the pages (issue 19): no serious or critical violation on any viewer page,
at desktop and mobile sizes, against a real ``evalboard serve``."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.helpers.a11y import assert_accessible, axe_violations
from tests.helpers.browser import SIZES, page_at
from tests.leaderboard.conftest import LiveServer
from tests.leaderboard.seeding import TASK

pytestmark = [pytest.mark.browser]

_BAD_PAGE = """<!doctype html><html lang="en"><head><title>bad</title>
<meta http-equiv="Content-Security-Policy" content="script-src 'self'"></head>
<body><main><h1>Bad</h1><p style="color:#aaa;background:#fff">grey on white</p>
<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw="></main></body></html>"""


def test_the_check_finds_serious_violations_under_the_pages_policy(browser: Any) -> None:
    # The helper itself can fail: axe runs under a script-src 'self' policy like ours.
    with page_at(browser, "desktop") as watched:
        watched.page.set_content(_BAD_PAGE)
        found = {v["id"]: v["impact"] for v in axe_violations(watched.page)}
        assert found == {"color-contrast": "serious", "image-alt": "critical"}
        with pytest.raises(pytest.fail.Exception, match=r"color-contrast \(serious\)"):
            assert_accessible(watched.page, "the bad page")


@pytest.fixture(scope="module")
def viewer_pages(live_server: LiveServer) -> list[str]:
    """Every page a viewer meets, in the states they meet it in (a snapshot made first)."""
    roberta = live_server.seeded.submissions["roberta-large"]
    httpx.post(
        f"{live_server.url}/tasks/{TASK}/snapshots",
        json={"title": "For the accessibility check"},
        headers={"Authorization": f"Bearer {live_server.seeded.tokens['owner']}"},
    ).raise_for_status()
    return [
        "/ui",
        "/ui/login",
        f"/ui/tasks/{TASK}",
        f"/ui/tasks/{TASK}?weights=perf:1,throughput:10&sort=-throughput&q=e&baselines=false",
        f"/ui/tasks/{TASK}?q=nothing-matches-this",
        f"/ui/tasks/{TASK}/models/{roberta}",
        f"/ui/tasks/{TASK}/models/{roberta}?dataset=dev&wrong_only=true&sort=score",
        f"/ui/tasks/{TASK}/snapshots/1",
        f"/ui/submissions/{roberta}",
    ]


@pytest.mark.slow
@pytest.mark.parametrize("size", list(SIZES))
def test_no_viewer_page_has_a_serious_violation(
    browser: Any, live_server: LiveServer, viewer_pages: list[str], size: str
) -> None:
    with page_at(browser, size) as watched:
        for path in viewer_pages:
            watched.page.goto(live_server.url + path)
            watched.page.wait_for_load_state("networkidle")
            assert_accessible(watched.page, f"{path} at {size}")
            # Nothing wider than the window: a wide table scrolls inside its own box.
            assert watched.overflow() == 0, path
        watched.assert_clean(size)

"""axe-core on the pages (issue 19): no serious or critical violation on any viewer page,
at desktop and mobile sizes, against a real ``evalboard serve``."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.a11y import assert_accessible, axe_violations
from tests.helpers.browser import page_at

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

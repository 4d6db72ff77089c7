"""Every state-changing page form is CSRF-protected (issue 19): a post to any ``/ui`` route
without the session's token is refused before it does anything, even from an admin."""

from __future__ import annotations

import re

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute

from leaderboard.routes import account_pages, admin_pages, loop_pages, manage, pages, snapshots
from tests.leaderboard.conftest import make_client
from tests.leaderboard.seeding import TASK, Seeded
from tests.leaderboard.test_pages import _sign_in

pytestmark = pytest.mark.anyio

#: A plausible value for each path parameter, so a route's own lookups would succeed.
_VALUES = {"task_id": TASK, "name": "alice", "action": "cancel", "number": "1"}


#: Every router that serves pages (the app includes each; FastAPI wraps included routers,
#: so their routes are read here).
_PAGE_ROUTERS = [
    pages.router,
    manage.router,
    loop_pages.router,
    account_pages.router,
    admin_pages.router,
    snapshots.pages_router,
]


def _page_posts() -> list[str]:
    paths = []
    for route in (r for router in _PAGE_ROUTERS for r in router.routes):
        if isinstance(route, APIRoute) and route.path.startswith("/ui") and "POST" in route.methods:
            paths.append(re.sub(r"\{(\w+)\}", lambda m: _VALUES.get(m.group(1), "1"), route.path))
    return paths


async def test_every_page_post_needs_the_forms_csrf_token(app: FastAPI, seeded: Seeded) -> None:
    posts = _page_posts()
    # The role pages of issue 19 are among them.
    for expected in ("/ui/admin/jobs/1/cancel", "/ui/me/tokens", "/ui/examples/1/retract"):
        assert expected in posts
    async with make_client(app) as client:
        await _sign_in(client, "admin")
        for path in posts:
            for data in ({}, {"csrf_token": "stale-or-guessed"}):
                answer = await client.post(path, data=data)
                assert answer.status_code == 403, f"{path} with {data}: {answer.status_code}"
                assert "CSRF" in answer.text, path

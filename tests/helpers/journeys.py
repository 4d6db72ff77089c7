"""What every role's journey checks on each page, and a signed-in client for its attacks."""

from __future__ import annotations

import re
from typing import Any

import httpx

from tests.helpers.a11y import assert_accessible
from tests.helpers.browser import Watched


def check_page(watched: Watched, where: str) -> None:
    """Once the page is idle: no serious axe-core violation, and no sideways scroll."""
    watched.page.wait_for_load_state("networkidle")
    assert_accessible(watched.page, where)
    assert watched.overflow() == 0, f"{where} scrolls sideways"


def form_token(html: str) -> str:
    """The CSRF token of the first form on a page."""
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, "no CSRF token in the form"
    return match.group(1)


def signed_in(base: str, name: str, password: str, page: str = "/ui/me") -> tuple[Any, str]:
    """An httpx client signed in through the login form, and the CSRF token of ``page``."""
    client = httpx.Client(base_url=base)
    token = form_token(client.get("/ui/login").text)
    done = client.post(
        "/ui/login", data={"name": name, "password": password, "csrf_token": token, "next": "/ui"}
    )
    assert done.status_code == 303, done.text
    return client, form_token(client.get(page).text)

"""Rendering pages: every template gets the caller, the CSRF token and the flash message."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse

from leaderboard.accounts import Principal
from leaderboard.auth import check_csrf, csrf_token

__all__ = ["FORM_AGAIN", "flash", "form_csrf", "local_path", "redirect", "render", "signed_in"]


#: The status of a form shown again with its error beside it (issue 19). It is a page the
#: user goes on with, not a dead end: 200, as Chromium logs every 4xx page load as a
#: console error. The JSON API keeps its 4xx answers for the same mistakes.
FORM_AGAIN = 200


def render(
    request: Request,
    template: str,
    principal: Principal,
    status_code: int = 200,
    **context: Any,
) -> HTMLResponse:
    templates = request.app.state.templates
    message = request.session.pop("flash", None)
    response: HTMLResponse = templates.TemplateResponse(
        request,
        template,
        {"principal": principal, "csrf": csrf_token(request), "flash": message, **context},
        status_code=status_code,
    )
    return response


def flash(request: Request, message: str, kind: str = "ok") -> None:
    request.session["flash"] = {"text": message, "kind": kind}


def redirect(path: str) -> RedirectResponse:
    return RedirectResponse(path, status_code=303)


async def form_csrf(request: Request) -> dict[str, Any]:
    """The submitted form, after checking its CSRF token."""
    form = await request.form()
    token = form.get("csrf_token")
    check_csrf(request, token if isinstance(token, str) else None)
    return dict(form)


def login_path(next_path: str) -> str:
    return f"/ui/login?next={quote(next_path)}"


class SignInFirst(Exception):
    """A page for the signed-in, opened signed out: the error handlers send the visitor
    to sign in, and back to the page after."""


def signed_in(principal: Principal) -> int:
    """The visitor's user id; a visitor signed out goes to sign in first (:class:`SignInFirst`)."""
    if principal.user_id is None:
        raise SignInFirst
    return principal.user_id


def local_path(path: str) -> str:
    """``path`` if it stays on this site, else ``/ui``."""
    # Only same-site paths: no open redirect through ?next=. Browsers read a backslash as
    # a slash ("/\\evil" is "//evil") and drop tabs and newlines: refuse both.
    if (
        not path.startswith("/")
        or path.startswith("//")
        or "\\" in path
        or any(ord(c) < 0x20 or ord(c) == 0x7F for c in path)
    ):
        return "/ui"
    return path

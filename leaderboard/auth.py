"""Who is calling: a Bearer token (CLI, scripts) or the signed session cookie (pages).

The session cookie is signed with :func:`~leaderboard.signing_key.signing_key` (starlette's
SessionMiddleware, SameSite=Lax, re-signed on every response so that it lapses after
``session_idle_hours`` without a request). It carries the user's ``session_version``,
checked against the database on every request: signing out, a new password, a role change
or a revoked token bump the version and so end every session of that user at once. It
also carries its sign-in time; ``session_max_hours`` after it the session ends anyway.

A request that rides on the cookie and changes something must also carry
the session's CSRF token: a ``csrf_token`` form field on pages, an ``X-CSRF-Token`` header
from scripts. Bearer requests need none (a browser never attaches them by itself).
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import MutableMapping
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from evalboard.core.context import Context
from evalboard.core.errors import PermissionDenied
from evalboard.core.tables import User
from leaderboard.accounts import (
    ANONYMOUS,
    Principal,
    end_sessions,
    principal_for,
    principal_for_token,
)

__all__ = [
    "CtxDep",
    "PrincipalDep",
    "SignedInDep",
    "check_csrf",
    "csrf_token",
    "current_principal",
    "get_ctx",
    "session_principal",
    "sign_in",
    "sign_out",
    "signed_in_principal",
]

_SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
_bearer = HTTPBearer(auto_error=False, description="An API token from `evalboard token create`.")


class _BadToken(PermissionDenied):
    http_status = 401


def get_ctx(request: Request) -> Context:
    ctx: Context = request.app.state.ctx
    return ctx


CtxDep = Annotated[Context, Depends(get_ctx)]


def csrf_token(request: Request) -> str:
    """The session's CSRF token, made on first use."""
    token = request.session.get("csrf")
    if not isinstance(token, str):
        token = secrets.token_urlsafe(24)
        request.session["csrf"] = token
    return token


def check_csrf(request: Request, submitted: str | None) -> None:
    expected = request.session.get("csrf")
    if (
        not isinstance(expected, str)
        or not submitted
        or not hmac.compare_digest(expected, submitted)
    ):
        raise PermissionDenied(
            "The form's CSRF token is missing or stale; reload the page and try again"
        )


def sign_in(request: Request, user: User) -> None:
    request.session.clear()
    request.session.update(user_id=user.id, version=user.session_version, since=int(time.time()))
    csrf_token(request)


def sign_out(request: Request, ctx: Context) -> None:
    """End the session: this cookie, and (one version per user) the user's other ones."""
    user_id = request.session.get("user_id")
    if isinstance(user_id, int):
        end_sessions(ctx, user_id)
    request.session.clear()


def session_principal(ctx: Context, session: MutableMapping[str, Any]) -> Principal:
    """The signed-in user of a (signature-checked) session; an ended or expired session
    is emptied and gives the anonymous principal."""
    user_id, version, since = (session.get(k) for k in ("user_id", "version", "since"))
    if user_id is None:
        return ANONYMOUS
    max_age = ctx.settings.session_max_hours * 3600
    fresh = isinstance(since, int) and 0 <= time.time() - since <= max_age
    principal = (
        principal_for(ctx, user_id, session_version=version)
        if fresh and isinstance(user_id, int) and isinstance(version, int)
        else ANONYMOUS
    )
    if not principal.signed_in:
        session.clear()
    return principal


async def current_principal(request: Request, ctx: CtxDep) -> Principal:
    """The caller, from a Bearer token or the session; anonymous when neither.

    The header is read directly, so routes open to everyone do not declare a required
    security scheme; routes that need an account use :data:`SignedInDep`, which does.
    """
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        principal = principal_for_token(ctx, token.strip())
        if principal is None:
            raise _BadToken(
                "The API token is unknown or revoked; create a new one with "
                "`evalboard token create NAME`"
            )
        return principal
    principal = session_principal(ctx, request.session)
    if principal.signed_in and request.method not in _SAFE_METHODS and _is_api(request):
        check_csrf(request, request.headers.get("x-csrf-token"))
    return principal


def _is_api(request: Request) -> bool:
    # Pages check their form's token themselves, after reading the form.
    return not request.url.path.startswith("/ui")


PrincipalDep = Annotated[Principal, Depends(current_principal)]


async def signed_in_principal(
    principal: PrincipalDep,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    """The caller, who must be signed in: 401 before the request body is even read."""
    principal.require_signed_in()
    return principal


SignedInDep = Annotated[Principal, Depends(signed_in_principal)]

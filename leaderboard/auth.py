"""Who is calling: a Bearer token (CLI, scripts) or the signed session cookie (pages).

The session cookie is signed with ``settings.secret_key`` (starlette's SessionMiddleware,
SameSite=Lax). A request that rides on the cookie and changes something must also carry
the session's CSRF token: a ``csrf_token`` form field on pages, an ``X-CSRF-Token`` header
from scripts. Bearer requests need none (a browser never attaches them by itself).
"""

from __future__ import annotations

import hmac
import secrets
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from evalboard.core.context import Context
from evalboard.core.errors import PermissionDenied
from leaderboard.accounts import ANONYMOUS, Principal, principal_for, principal_for_token

__all__ = [
    "CtxDep",
    "PrincipalDep",
    "SignedInDep",
    "check_csrf",
    "csrf_token",
    "current_principal",
    "get_ctx",
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


def sign_in(request: Request, user_id: int) -> None:
    request.session.clear()
    request.session["user_id"] = user_id
    csrf_token(request)


def sign_out(request: Request) -> None:
    request.session.clear()


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
    user_id = request.session.get("user_id")
    if not isinstance(user_id, int):
        return ANONYMOUS
    principal = principal_for(ctx, user_id)
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

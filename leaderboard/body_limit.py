"""Refuse oversized request bodies before anything reads them.

FastAPI parses a form (a dataset file) before its dependencies check who is asking, so
without a cap an anonymous client could make the server spool any amount to disk before
hearing 401. Bodies are capped here, per kind of caller: only a caller whose credentials
check out (a known Bearer token, or a live session: this middleware runs inside the
session middleware) may send up to ``max_request_bytes``; anyone else, including a
request that merely carries an ``Authorization`` header or a cookie, gets 64 KiB (a login
form is a few hundred bytes). Model uploads go in chunks to ``/uploads`` and have their
own limits there.
"""

from __future__ import annotations

from anyio import to_thread
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evalboard.core.context import Context
from leaderboard.accounts import token_user_id
from leaderboard.auth import session_principal

__all__ = ["ANONYMOUS_MAX_BYTES", "BodyLimitMiddleware"]

#: What a caller with no verified credentials may send.
ANONYMOUS_MAX_BYTES = 64 * 1024


class BodyTooLarge(Exception):
    pass


def _verified(ctx: Context, scope: Scope) -> bool:
    """Whether the request's Bearer token or session belongs to a user (a database read)."""
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token_user_id(ctx, token.strip()) is not None
    session = scope.get("session")
    return isinstance(session, dict) and bool(session) and session_principal(ctx, session).signed_in


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class BodyLimitMiddleware:
    """Answer 413 to a body over its cap: at once if declared, else when it gets there."""

    def __init__(self, app: ASGIApp, *, ctx: Context, max_bytes: int) -> None:
        self.app = app
        self.ctx = ctx
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cap = ANONYMOUS_MAX_BYTES
        checked = False

        async def widen() -> int:
            # Small bodies need no database read; larger ones only from a verified caller.
            nonlocal cap, checked
            if not checked:
                checked = True
                if await to_thread.run_sync(_verified, self.ctx, scope):
                    cap = self.max_bytes
            return cap

        declared = _declared_length(scope)
        if declared is not None and declared > cap and declared > await widen():
            await _too_large(cap)(scope, receive, send)
            return
        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > cap and received > await widen():
                    raise BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await _too_large(cap)(scope, receive, send)


def _too_large(cap: int) -> JSONResponse:
    return JSONResponse(
        {
            "detail": f"The request body is larger than the {cap} bytes allowed; sign in (a valid "
            "token or session) for larger forms, and send models in chunks to /uploads"
        },
        status_code=413,
    )

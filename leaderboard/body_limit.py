"""Refuse oversized request bodies before anything reads them.

FastAPI parses a form (a dataset file) before its dependencies check who is asking, so
without a cap an anonymous client could make the server spool any amount to disk before
hearing 401. Bodies are capped here, per kind of caller: only a caller whose credentials
check out (a known Bearer token, or a live session: this middleware runs inside the
session middleware) may send up to ``max_request_bytes``; anyone else, including a
request that merely carries an ``Authorization`` header or a cookie, gets 64 KiB (a login
form is a few hundred bytes). Model uploads go in chunks to ``/uploads`` and have their
own limits there.

A JSON body or a url-encoded form is read whole and parsed in memory (about 20 times its
size as Python objects), so even a verified caller may send only ``max_json_bytes`` of
one; multipart forms (spooled to disk) and upload chunks (streamed) may reach
``max_request_bytes``.
"""

from __future__ import annotations

from anyio import to_thread
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evalboard.core.context import Context
from leaderboard.accounts import token_user_id
from leaderboard.auth import session_principal
from leaderboard.strict_text import parsed_whole

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
        self.max_parsed_bytes = min(ctx.settings.max_json_bytes, max_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        parsed = parsed_whole(scope)
        wide = self.max_parsed_bytes if parsed else self.max_bytes
        cap = min(ANONYMOUS_MAX_BYTES, wide)
        checked = verified = False

        async def widen() -> int:
            # Small bodies need no database read; larger ones only from a verified caller.
            nonlocal cap, checked, verified
            if not checked:
                checked = True
                verified = await to_thread.run_sync(_verified, self.ctx, scope)
                cap = wide if verified else cap
            return cap

        def refusal() -> JSONResponse:
            return _too_large(cap, verified=verified, parsed=parsed)

        declared = _declared_length(scope)
        if declared is not None and declared > cap and declared > await widen():
            await refusal()(scope, receive, send)
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
                await refusal()(scope, receive, send)


def _too_large(cap: int, *, verified: bool, parsed: bool) -> JSONResponse:
    allowed = f"the {cap} bytes ({cap / 1024**2:.1f} MiB) allowed"
    if not verified:
        detail = (
            f"The request body is larger than the {cap} bytes allowed; sign in (a valid "
            "token or session) for larger forms, and send models in chunks to /uploads"
        )
    elif parsed:
        detail = (
            f"The JSON or url-encoded body is larger than {allowed} for one (it is parsed "
            "in memory; EVALBOARD_MAX_JSON_BYTES): send files as multipart/form-data, "
            "models in chunks to /uploads as application/octet-stream, or ask the operator "
            "to raise the limit"
        )
    else:
        detail = (
            f"The request body is larger than {allowed} for one request "
            "(EVALBOARD_MAX_REQUEST_BYTES); send models in chunks to /uploads"
        )
    return JSONResponse({"detail": detail}, status_code=413)

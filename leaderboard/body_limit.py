"""Refuse oversized request bodies before anything reads them.

FastAPI parses a form (a dataset file) before its dependencies check who is asking, so
without a cap an anonymous client could make the server spool any amount to disk before
hearing 401. Bodies are capped here, per kind of caller: a request with no credentials
at all (no Bearer token, no session cookie) may send only a small body (a login form).
Model uploads go in chunks to ``/uploads`` and have their own limits there.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["ANONYMOUS_MAX_BYTES", "BodyLimitMiddleware"]

#: What a caller with no credentials may send (a login form is a few hundred bytes).
ANONYMOUS_MAX_BYTES = 64 * 1024
_SESSION_COOKIE = b"evalboard_session="


class BodyTooLarge(Exception):
    pass


def _has_credentials(scope: Scope) -> bool:
    for name, value in scope.get("headers", []):
        if name == b"authorization" and value:
            return True
        if name == b"cookie" and _SESSION_COOKIE in value:
            return True
    return False


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

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cap = self.max_bytes if _has_credentials(scope) else ANONYMOUS_MAX_BYTES
        declared = _declared_length(scope)
        if declared is not None and declared > cap:
            await _refuse(send, cap)
            return
        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > cap:
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
                await _refuse(send, cap)


async def _refuse(send: Send, cap: int) -> None:
    body = (
        b'{"detail":"The request body is larger than the '
        + str(cap).encode()
        + b' bytes allowed; sign in for larger forms, and send models in chunks to /uploads"}'
    )
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})

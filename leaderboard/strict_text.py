"""Refuse text that no database column can hold, before any route sees it.

A NUL character (PostgreSQL's text cannot store one) or a lone UTF-16 surrogate (not
encodable as UTF-8) in the path, the query string, a JSON body or a url-encoded form is
answered 422 here, once for every route, instead of failing deep in a query as a 500.
Multipart bodies (dataset files) and raw upload chunks are bytes, checked where they are
parsed (dataset rows by the importer; other multipart text fields fall back on the
database's DataError, answered 422 as InvalidText). A page's form (``/ui``) hears the one
error page instead of JSON: what was wrong, and the way back to the form as it was typed.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import unquote_to_bytes

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evalboard.core.validation import bad_text
from leaderboard.errors import error_response

__all__ = ["StrictTextMiddleware", "bad_text"]

_SUSPECT_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")


def _bad_url_part(raw: bytes, *, plus_is_space: bool = False) -> bool:
    if plus_is_space:
        raw = raw.replace(b"+", b" ")
    try:
        return bad_text(unquote_to_bytes(raw).decode("utf-8"))
    except UnicodeDecodeError:  # an encoded surrogate is not valid UTF-8 either
        return True


def _bad_json(value: Any) -> bool:
    if isinstance(value, str):
        return bad_text(value)
    if isinstance(value, dict):
        return any(bad_text(k) or _bad_json(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_bad_json(v) for v in value)
    return False


def _bad_body(content_type: str, body: bytes) -> bool:
    if content_type == "application/x-www-form-urlencoded":
        return _bad_url_part(body, plus_is_space=True)
    if not _SUSPECT_ESCAPE.search(body):
        # In JSON a NUL or a surrogate can only be a \u escape (raw control characters and
        # invalid UTF-8 fail parsing anyway): without one, no second parse is needed.
        return False
    try:
        parsed = json.loads(body)
    except ValueError:
        return False  # not JSON at all: the route's own validation says so
    return _bad_json(parsed)


def _content_type(scope: Scope) -> str:
    for name, value in scope.get("headers", []):
        if name == b"content-type":
            return str(value.decode("latin-1")).split(";", 1)[0].strip().lower()
    return ""


def _checks_body(content_type: str) -> bool:
    return content_type in ("application/json", "application/x-www-form-urlencoded") or (
        content_type.startswith("application/") and content_type.endswith("+json")
    )


class StrictTextMiddleware:
    """422 for a NUL or a lone surrogate anywhere in a request's text."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw_path = scope.get("raw_path") or scope["path"].encode("utf-8", "surrogatepass")
        if _bad_url_part(raw_path) or _bad_url_part(
            scope.get("query_string", b""), plus_is_space=True
        ):
            where = "path" if _bad_url_part(raw_path) else "query"
            await _refused(scope, receive, where)(scope, receive, send)
            return
        content_type = _content_type(scope)
        if not _checks_body(content_type):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message], receive), send)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if _bad_body(content_type, body):
            await _refused(scope, receive, "form" if scope["path"].startswith("/ui") else "body")(
                scope, receive, send
            )
            return
        replayed: Message = {"type": "http.request", "body": body, "more_body": False}
        await self.app(scope, _replay([replayed], receive), send)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    async def replay() -> Message:
        return messages.pop(0) if messages else await receive()

    return replay


def _message(where: str) -> str:
    return (
        f"The {where} holds a NUL character or an unpaired surrogate, which Evalboard "
        "does not store; remove it and send the text as plain UTF-8"
    )


def _refused(scope: Scope, receive: Receive, where: str) -> Response:
    if scope["path"].startswith("/ui"):
        return error_response(Request(scope, receive), 422, _message(where))
    # Shaped as FastAPI's own 422 (HTTPValidationError), which every route documents.
    problem = {"loc": [where], "msg": _message(where), "type": "invalid_text"}
    return JSONResponse({"detail": [problem]}, status_code=422)

"""Refuse text that no database column can hold, before any route sees it.

A NUL character (PostgreSQL's text cannot store one) or a lone UTF-16 surrogate (not
encodable as UTF-8) in the path, the query string, a JSON body or a url-encoded form is
answered 422 here, once for every route, instead of failing deep in a query as a 500.
Multipart bodies (dataset files) and raw upload chunks are bytes, checked where they are
parsed (dataset rows by the importer; other multipart text fields fall back on the
database's DataError, answered 422 as InvalidText). A page's form (``/ui``) hears the one
error page instead of JSON: what was wrong, and the way back to the form as it was typed.

JSON nested deeper than :data:`MAX_JSON_DEPTH` is answered 422 here too, for any JSON
body: Python's parser, pydantic and the encoders all recurse, so a body of a few thousand
``[`` would otherwise end in a RecursionError (a 500) wherever it first went deep.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any
from urllib.parse import unquote_to_bytes

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evalboard.core.validation import bad_text
from leaderboard.errors import error_response

__all__ = ["MAX_JSON_DEPTH", "StrictTextMiddleware", "bad_text", "json_depth", "parsed_whole"]

#: The deepest nesting of arrays and objects a JSON body may have. Evalboard's own bodies
#: nest a few levels (a prediction's probabilities sit at the fifth); recursion fails near
#: a thousand.
MAX_JSON_DEPTH = 64

_SUSPECT_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')
_NOT_QUOTE_OR_BRACKET = bytes(sorted(set(range(256)) - set(b'"[]{}')))
_STEPS = bytes.maketrans(b"[]{}", b"\x01\xff\x01\xff")  # +1 and -1 as signed bytes


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


def _as_utf8(body: bytes) -> bytes:
    """The JSON body as UTF-8: Python's parser also reads UTF-16 and UTF-32, in which the
    byte patterns below would not be seen."""
    encoding = json.detect_encoding(body)
    if encoding.startswith("utf-8"):
        return body
    try:
        return body.decode(encoding, "surrogatepass").encode("utf-8", "surrogatepass")
    except UnicodeError:
        return body  # the parser cannot read it either


def json_depth(body: bytes) -> int:
    """How deep a UTF-8 JSON body nests arrays and objects, without parsing it.

    Brackets inside strings do not count. In a body that is not JSON the answer is only
    exact up to where it stops being JSON, which is as far as a parser would go.

    Examples:
        >>> json_depth(b'{"a": [1, {"b": "]]"}], "c": []}')
        3
    """
    # Escapes out first (a \" does not end a string), then all but quotes and brackets
    # (a tenth of a predictions body), then the strings: what is left is the structure.
    unescaped = _ESCAPE.sub(b"", body) if b"\\" in body else body
    structure = _STRING.sub(b"", unescaped.translate(None, _NOT_QUOTE_OR_BRACKET))
    return max(accumulate(memoryview(structure.translate(_STEPS)).cast("b")), default=0)


def _bad_json_text(body: bytes) -> bool:
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


def _is_json(content_type: str) -> bool:
    # As FastAPI decides which bodies to parse as JSON (none without a content type).
    return content_type == "application/json" or (
        content_type.startswith("application/") and content_type.endswith("+json")
    )


def parsed_whole(scope: Scope) -> bool:
    """Whether the request's body is read whole into memory and parsed: JSON and
    url-encoded forms (multipart forms spool their files to disk; upload chunks stream)."""
    content_type = _content_type(scope)
    return _is_json(content_type) or content_type == "application/x-www-form-urlencoded"


class StrictTextMiddleware:
    """422 for a NUL or a lone surrogate anywhere in a request's text, and for JSON nested
    deeper than :data:`MAX_JSON_DEPTH`."""

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
            refusal = _refused(scope, receive, where, "invalid_text", _bad_text_message(where))
            await refusal(scope, receive, send)
            return
        if not parsed_whole(scope):
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
        where = "form" if scope["path"].startswith("/ui") else "body"
        problem = _body_problem(_content_type(scope), body, where)
        if problem:
            await _refused(scope, receive, where, *problem)(scope, receive, send)
            return
        replayed: Message = {"type": "http.request", "body": body, "more_body": False}
        await self.app(scope, _replay([replayed], receive), send)


def _body_problem(content_type: str, body: bytes, where: str) -> tuple[str, str] | None:
    """What is wrong with the body, as FastAPI's error type and message, or None."""
    if not _is_json(content_type):
        bad = _bad_url_part(body, plus_is_space=True)
        return ("invalid_text", _bad_text_message(where)) if bad else None
    utf8 = _as_utf8(body)
    opened = utf8.count(b"[") + utf8.count(b"{")  # most bodies: too few to go deep
    if opened > MAX_JSON_DEPTH and json_depth(utf8) > MAX_JSON_DEPTH:
        message = (
            f"The JSON {where} nests arrays and objects more than {MAX_JSON_DEPTH} levels "
            "deep, which Evalboard does not read (its own bodies nest a few levels); send "
            "only the fields the request's schema names"
        )
        return "json_too_deep", message
    return ("invalid_text", _bad_text_message(where)) if _bad_json_text(utf8) else None


def _replay(messages: list[Message], receive: Receive) -> Receive:
    async def replay() -> Message:
        return messages.pop(0) if messages else await receive()

    return replay


def _bad_text_message(where: str) -> str:
    return (
        f"The {where} holds a NUL character or an unpaired surrogate, which Evalboard "
        "does not store; remove it and send the text as plain UTF-8"
    )


def _refused(scope: Scope, receive: Receive, where: str, kind: str, message: str) -> Response:
    if scope["path"].startswith("/ui"):
        return error_response(Request(scope, receive), 422, message)
    # Shaped as FastAPI's own 422 (HTTPValidationError), which every route documents.
    problem = {"loc": [where], "msg": message, "type": kind}
    return JSONResponse({"detail": [problem]}, status_code=422)

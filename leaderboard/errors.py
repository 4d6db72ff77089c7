"""The one place where errors become HTTP responses.

Deep code raises :class:`~evalboard.core.errors.EvalboardError` subclasses, each with its
``http_status``; the handlers here turn them (and scoring's ``ScoringError``, which is a
``ValueError``) into ``{"detail": message}`` with that status. Pages get the same message
rendered as HTML.
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from evalboard.core.errors import EvalboardError
from leaderboard.auth import session_principal
from leaderboard.routes._page import SignInFirst, local_path, login_path, redirect
from scoring import InvalidWeightsError, ScoringError

__all__ = [
    "ERROR_RESPONSES",
    "UNPROCESSABLE_RESPONSES",
    "ErrorPublic",
    "UnprocessablePublic",
    "error_response",
    "install_error_handlers",
]


class ErrorPublic(BaseModel):
    """Every error the API returns on purpose."""

    detail: str = Field(description="What was wrong and how to fix it.")


class UnprocessablePublic(BaseModel):
    """A 422: one line from our own checks, or the list FastAPI's validation gives."""

    detail: str | list[dict[str, Any]] = Field(
        description="What was wrong and how to fix it, or one entry per bad field."
    )


#: For routes whose parameters are checked by our code as well as by FastAPI's.
UNPROCESSABLE_RESPONSES: dict[int | str, dict[str, Any]] = {
    422: {"model": UnprocessablePublic, "description": "A parameter that cannot be used."}
}


def _described(description: str) -> dict[str, Any]:
    return {"model": ErrorPublic, "description": description}


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _described("Bad input; the message says how to fix it."),
    401: _described("Not signed in: send a Bearer token or log in."),
    403: _described("Signed in, but your role does not allow this."),
    404: _described("No such thing (or hidden from you)."),
    409: _described("Clashes with what is stored."),
    413: _described("Too large."),
    429: _described("Daily upload quota spent."),
    503: _described("The platform lacks something it needs, or is busy; not your fault."),
}


def _wants_html(request: Request) -> bool:
    return request.url.path.startswith("/ui") or (
        "text/html" in request.headers.get("accept", "")
        and not request.url.path.startswith("/api")
        and request.method == "GET"
    )


def _way_back(request: Request) -> str | None:
    """The page of this site the user came from (its Referer), to return to; None when it
    is another site's, absent, or this very page."""
    came_from = urlsplit(request.headers.get("referer", ""))
    if came_from.netloc != request.url.netloc or not came_from.path:
        return None
    back = local_path(came_from.path + (f"?{came_from.query}" if came_from.query else ""))
    return None if back == request.url.path and request.method == "GET" else back


def error_response(request: Request, status: int, message: str) -> Response:
    """The error as a page for a browser on ``/ui`` (one design: what happened and a way
    back), as ``{"detail": message}`` for the API."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    if _wants_html(request):
        templates = request.app.state.templates
        session = request.session if "session" in request.scope else {}
        principal = session_principal(request.app.state.ctx, session)
        page: Response = templates.TemplateResponse(
            request,
            "error.html",
            {
                "status": status,
                "message": message,
                "posted": request.method == "POST",
                "back": _way_back(request),
                "principal": principal,
                "csrf": session.get("csrf", ""),
                "flash": None,
            },
            status_code=status,
            headers=headers,
        )
        return page
    return JSONResponse({"detail": message}, status_code=status, headers=headers)


#: The most of a caller's input a 422 repeats back; a larger value is left out.
MAX_ECHOED_INPUT = 200


def _without_large_input(error: dict[str, Any]) -> dict[str, Any]:
    shown = {k: v for k, v in error.items() if k not in ("input", "url")}
    if "input" in error:
        try:
            value = jsonable_encoder(error["input"])
            if len(repr(value)) <= MAX_ECHOED_INPUT:
                shown["input"] = value
        except RecursionError:
            pass  # nested too deep to repeat (StrictTextMiddleware refuses such JSON first)
    return shown


def _finite(value: Any) -> Any:
    """The value with NaN and the infinities as the strings JSON's extensions spell them
    with: Python's parser reads ``NaN``, ``Infinity`` and ``1e400``, strict JSON (the
    response) cannot hold them."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


def _method_not_allowed(request: Request) -> Response:
    # Starlette answers from the first route whose path matches; list every route's methods.
    allowed: set[str] = set()
    for route in request.app.router.routes:
        regex = getattr(route, "path_regex", None)
        if regex is not None and regex.match(request.url.path):
            allowed |= set(getattr(route, "methods", None) or ())
    if "GET" in allowed:
        allowed.add("HEAD")
    return JSONResponse(
        {"detail": f"{request.method} is not allowed here; use {', '.join(sorted(allowed))}"},
        status_code=405,
        headers={"Allow": ", ".join(sorted(allowed))},
    )


def install_error_handlers(app: FastAPI) -> None:
    """Map domain errors, scoring errors and HTTP errors to responses; send a visitor
    signed out of a page for the signed-in to sign in."""

    async def domain(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, EvalboardError)
        return error_response(request, exc.http_status, exc.message)

    async def scoring(request: Request, exc: Exception) -> Response:
        # Weights are well-formed requests with unusable values: 422, as InvalidWeights.
        status = 422 if isinstance(exc, InvalidWeightsError) else 400
        return error_response(request, status, str(exc))

    async def http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 404 and _wants_html(request):
            return error_response(request, 404, "No such page.")
        if exc.status_code == 405:
            return _method_not_allowed(request)
        if isinstance(exc.detail, str):
            return JSONResponse(
                {"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers
            )
        return JSONResponse({"detail": str(exc.detail)}, status_code=exc.status_code)

    async def sign_in_first(request: Request, exc: Exception) -> Response:
        return redirect(login_path(request.url.path))

    async def invalid(request: Request, exc: Exception) -> Response:
        # FastAPI's own handler repeats each bad value: a 60 MB body would come back whole.
        assert isinstance(exc, RequestValidationError)
        errors = [_without_large_input(dict(e)) for e in exc.errors()]
        return JSONResponse({"detail": _finite(jsonable_encoder(errors))}, status_code=422)

    app.add_exception_handler(EvalboardError, domain)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(ScoringError, scoring)
    app.add_exception_handler(StarletteHTTPException, http)
    app.add_exception_handler(SignInFirst, sign_in_first)

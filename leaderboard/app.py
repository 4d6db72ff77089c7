"""The web application: the JSON API, the pages, and the static files they need.

The API lives at the root (``/tasks``, ``/submissions``, ``/uploads``, ``/users``), its
schema at ``/openapi.json`` and its docs at ``/docs``; the pages under ``/ui``. plotly.js
is served from the installed plotly package: no page loads anything from elsewhere.
"""

from __future__ import annotations

import asyncio
import gzip
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import cache
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.middleware.sessions import SessionMiddleware

from evalboard import __version__
from evalboard.core.context import Context
from leaderboard.api_docs import install_api_docs
from leaderboard.body_limit import BodyLimitMiddleware
from leaderboard.errors import install_error_handlers
from leaderboard.headers import SecurityHeadersMiddleware
from leaderboard.routes import (
    account_pages,
    admin_pages,
    attributions,
    board_pages,
    compare,
    datasets,
    health,
    leaderboards,
    lineages,
    manage,
    model_pages,
    pages,
    phases,
    rounds,
    snapshots,
    submissions,
    suites,
    tasks,
    uploads,
    users,
)
from leaderboard.routes.loop import router as loop_router
from leaderboard.signing_key import signing_key
from leaderboard.strict_text import StrictTextMiddleware
from leaderboard.throttle import LoginThrottle
from leaderboard.uploads import expire_uploads_forever
from leaderboard.warmup import Warmup

__all__ = ["PLOTLY_JS", "create_app"]

logger = logging.getLogger(__name__)

_HERE = Path(__file__).parent
PLOTLY_JS = _HERE / "static" / "vendor" / "plotly-basic.min.js"


@cache
def _plotly_gzip() -> bytes:
    # 1.2 MB of script is 0.4 MB compressed; compressed once per process, on first use.
    return gzip.compress(PLOTLY_JS.read_bytes(), compresslevel=9, mtime=0)


_DESCRIPTION = """\
Evaluation-as-a-service with dynamic, utility-weighted leaderboards.

Authenticate with `Authorization: Bearer <token>` (`evalboard token create NAME`, or
`POST /users/me/tokens` while signed in). Reading tasks, leaderboards and non-hidden
datasets needs no account. Errors are `{"detail": "..."}` saying what to fix.
"""


def _made_before_requests(app: FastAPI) -> None:
    """What the first request of each kind would wait for, made as the server starts
    (``leaderboard.warmup``), each step on its own (one that fails is logged: its first
    request makes it). FastAPI 0.165 builds each included route's handling (its
    dependencies, its models' validators) when a request first meets it, about 0.2 s for
    them all here: making the API's schema walks and builds every one (the first board
    request after a start: 106 -> 26 ms at 10,000 models). The schema itself is dropped:
    FastAPI before 0.165 (``pyproject.toml`` admits it) keeps the first one made, and the
    first ``/openapi.json`` adds its ``root_path`` (a proxy's prefix) to it as it makes
    it. Jinja compiles a template on its first page (the task page's first: 266 -> 35
    ms); plotly's script is compressed once."""
    templates = app.state.templates.env

    def routes() -> None:
        app.openapi()
        app.openapi_schema = None

    def pages() -> None:
        for name in templates.list_templates():
            templates.get_template(name)

    for step in (routes, pages, _plotly_gzip):
        try:
            step()
        except Exception:  # noqa: BLE001 - only time lost
            logger.exception("not made as the server starts: %s", step.__name__)


def create_app(ctx: Context | None = None) -> FastAPI:
    """Build the application around ``ctx`` (default: from the environment's settings)."""
    ctx = ctx or Context.from_settings()
    context = ctx

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Stale uploads expire while the server runs: on start, then periodically.
        sweeper = asyncio.create_task(expire_uploads_forever(context))
        # Its first visitors find the boards read (leaderboard.warmup); /ready tells.
        warmup = Warmup(context, before_boards=lambda: _made_before_requests(app))
        app.state.warmup = warmup
        try:
            yield
        finally:
            sweeper.cancel()
            warmup.stop()

    app = FastAPI(
        lifespan=lifespan,
        title="Evalboard",
        version=__version__,
        docs_url=None,  # served from this machine by install_api_docs, not from a CDN
        redoc_url=None,
        description=_DESCRIPTION,
        openapi_tags=[
            {"name": "tasks", "description": "Tasks and their default weights."},
            {"name": "datasets", "description": "Immutable datasets; hidden ones owner-only."},
            {"name": "leaderboards", "description": "Rankings for any weights; downloads."},
            {"name": "uploads", "description": "Resumable model uploads."},
            {"name": "submissions", "description": "Status, logs, cancel, re-run."},
            {"name": "rounds", "description": "Collection rounds."},
            {"name": "phases", "description": "Private phases of hidden sets; predictions."},
            {"name": "lineages", "description": "Releases of a model and per-case history."},
            {"name": "suites", "description": "Versioned regression suites, as files."},
            {"name": "users", "description": "Accounts, roles and API tokens."},
        ],
    )
    app.state.ctx = ctx
    app.state.login_throttle = LoginThrottle()
    app.state.templates = Jinja2Templates(directory=str(_HERE / "templates"))
    # Outermost last: headers, then the session (so the body cap can verify it), the body
    # cap, and the text check, which reads capped bodies only.
    app.add_middleware(StrictTextMiddleware)
    app.add_middleware(BodyLimitMiddleware, ctx=ctx, max_bytes=ctx.settings.max_request_bytes)
    app.add_middleware(
        SessionMiddleware,
        secret_key=signing_key(ctx.settings),
        session_cookie="evalboard_session",
        # Re-signed on every response, and checked server-side: an idle timeout.
        max_age=int(ctx.settings.session_idle_hours * 3600),
        same_site="lax",
        https_only=ctx.settings.environment == "production",
    )
    app.add_middleware(SecurityHeadersMiddleware, hsts=ctx.settings.environment == "production")
    install_error_handlers(app)
    for module in (
        tasks,
        datasets,
        leaderboards,
        compare,
        uploads,
        submissions,
        rounds,
        snapshots,
        phases,
        lineages,
        suites,
        users,
        attributions,
    ):
        app.include_router(module.router)
    app.include_router(pages.router)
    app.include_router(board_pages.router)
    app.include_router(model_pages.router)
    app.include_router(snapshots.pages_router)
    app.include_router(compare.pages_router)
    app.include_router(lineages.pages_router)
    app.include_router(manage.router)
    app.include_router(account_pages.router)
    app.include_router(admin_pages.router)
    app.include_router(loop_router)  # rounds, collection, validation, failures + their pages
    app.include_router(health.router)

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/ui", status_code=307)

    @app.get("/static/vendor/plotly-basic.min.js", include_in_schema=False)
    def plotly_js(request: Request) -> Response:
        headers = {"Cache-Control": "public, max-age=86400", "Vary": "Accept-Encoding"}
        if "gzip" not in request.headers.get("accept-encoding", ""):
            return FileResponse(PLOTLY_JS, media_type="text/javascript", headers=headers)
        return Response(
            _plotly_gzip(),
            media_type="text/javascript",
            headers={**headers, "Content-Encoding": "gzip"},
        )

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:
        # Browsers ask for it on pages that name no icon (the API docs, JSON): no 404.
        return FileResponse(
            _HERE / "static" / "favicon.svg",
            media_type="image/svg+xml",
            headers={"Cache-Control": "public, max-age=86400"},
        )

    install_api_docs(app)
    app.mount("/static", StaticFiles(directory=str(_HERE / "static")), name="static")
    return app

"""``/docs`` served from this machine, not from a CDN.

FastAPI's default pages fetch Swagger UI and ReDoc from a CDN, which an offline platform
cannot reach (the pages came up blank here). The ``fastapi-offline`` package ships the
Swagger UI assets; we serve them from ``/static/vendor/docs`` and keep FastAPI's own page
builders.
"""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["DOCS_ASSETS", "install_api_docs"]

DOCS_ASSETS = Path(fastapi_offline.__file__).parent / "static"
_PREFIX = "/static/vendor/docs"


def install_api_docs(app: FastAPI) -> None:
    """Add ``/docs`` (Swagger UI) to an app built with ``docs_url=None``.

    ReDoc is left out: its page fetches a logo from a CDN whatever its options.
    """
    title = f"{app.title} API"

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=title,
            swagger_js_url=f"{_PREFIX}/swagger-ui-bundle.js",
            swagger_css_url=f"{_PREFIX}/swagger-ui.css",
            swagger_favicon_url=f"{_PREFIX}/favicon.png",
        )

    app.mount(_PREFIX, StaticFiles(directory=str(DOCS_ASSETS)), name="docs-assets")

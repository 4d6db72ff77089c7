"""Liveness and readiness: ``/health`` says the process serves; ``/ready`` that it can do
its work (the database answers and is migrated, and the broker, when one is configured).

A 503 from ``/ready`` says which part is down but never where it is (host, port, user):
anyone may call it. Load balancers route on ``/ready``; process supervisors restart on
``/health``.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from evalboard import __version__
from evalboard.core.errors import PlatformError
from evaluator import ping_broker
from leaderboard.auth import CtxDep

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/health")
def health() -> dict[str, str]:
    return {"status": "ok", "version": __version__}


@router.get("/ready")
async def ready(ctx: CtxDep) -> JSONResponse:
    checks: dict[str, str] = {}
    for name, check in (("database", ctx.db.ping), ("broker", lambda: ping_broker(ctx.settings))):
        try:
            await run_in_threadpool(check)
            checks[name] = "ok"
        except PlatformError as exc:
            checks[name] = exc.message
    up = all(value == "ok" for value in checks.values())
    return JSONResponse(
        {"status": "ok" if up else "unavailable", "version": __version__, "checks": checks},
        status_code=200 if up else 503,
    )

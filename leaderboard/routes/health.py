"""Liveness and readiness: ``/health`` says the process serves; ``/ready`` that it can do
its work (the database answers and is migrated, the broker when one is configured, and the
artifact store), and what the live workers last reported of their own parts (their sandbox
engine, their view of the store) with their heartbeat (:mod:`evaluator.jobs.heartbeat`).

A worker's fault does not make the server unready (it still serves pages and takes
uploads, and the jobs wait): ``workers`` is reported beside the checks, not among them;
so is ``boards``, whether the boards are read into memory yet (:mod:`leaderboard.warmup`).

A 503 from ``/ready`` says which part is down but never where it is (host, port, user):
anyone may call it. Load balancers route on ``/ready``; process supervisors restart on
``/health``.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from evalboard import __version__
from evalboard.core.context import Context
from evalboard.core.errors import PlatformError
from evaluator import live_workers, ping_broker, store_fault
from leaderboard.auth import CtxDep

__all__ = ["router"]

logger = logging.getLogger(__name__)

#: Each check's limit: a load balancer polls /ready, and a part that hangs is not ready.
_CHECK_S = 3.0

router = APIRouter(include_in_schema=False)


@router.get("/health")
def health() -> dict[str, str]:
    return {"status": "ok", "version": __version__}


def _store(ctx: Context) -> None:
    # The fault names the store's URL (a bucket, a host): that stays in the server's log.
    why = store_fault(ctx)
    if why is not None:
        logger.warning("/ready: %s", why)
        raise PlatformError("the artifact store does not answer")


def _workers(ctx: Context) -> dict[str, object]:
    """Counts only: worker names hold host names, which anonymous callers must not see."""
    rows = live_workers(ctx)
    engines = Counter(row.engine for row in rows)
    stores = Counter(row.store for row in rows)
    return {
        "live": len(rows),
        "sandbox_engine": dict(sorted(engines.items())),
        "artifact_store": dict(sorted(stores.items())),
    }


def _boards(request: Request) -> str:
    """Whether the boards are read yet: warming, warm, or failed (``leaderboard.warmup``;
    an app served without its lifespan reads them on request only)."""
    warmup = getattr(request.app.state, "warmup", None)
    return "warm" if warmup is None else str(warmup.state)


@router.get("/ready")
async def ready(ctx: CtxDep, request: Request) -> JSONResponse:
    checks: dict[str, str] = {}
    for name, check in (
        ("database", ctx.db.ping),
        ("broker", lambda: ping_broker(ctx.settings)),
        ("artifact_store", lambda: _store(ctx)),
    ):
        try:
            await asyncio.wait_for(run_in_threadpool(check), timeout=_CHECK_S)
            checks[name] = "ok"
        except PlatformError as exc:
            checks[name] = exc.message
        except TimeoutError:  # a client that retries (s3fs, botocore) takes its time
            checks[name] = f"no answer within {_CHECK_S:.0f} s"
    up = all(value == "ok" for value in checks.values())
    body: dict[str, object] = {
        "status": "ok" if up else "unavailable",
        "version": __version__,
        "checks": checks,
        # Information, not a check: a server reading its boards answers all along.
        "boards": _boards(request),
    }
    if checks["database"] == "ok":
        try:
            body["workers"] = await run_in_threadpool(_workers, ctx)
        except PlatformError as exc:
            body["workers"] = exc.message
    return JSONResponse(body, status_code=200 if up else 503)

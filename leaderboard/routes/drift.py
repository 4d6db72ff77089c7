"""Drift checks over HTTP: send traffic (owner or monitor), read the checks, the owner's page.

``POST /tasks/{id}/traffic`` takes a multipart form like a dataset upload: ``file``
(JSONL, CSV or TSV with the task's input fields; the suffix of its name tells the
format), ``map`` (``field=column,...``), ``queue`` and ``alpha``. The task owner's
answer lists what was queued; a monitor's carries the statistics only, so a production
service never learns which of its inputs the task already holds (hidden sets included).
"""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, File, Form, Path, Query, Request, UploadFile, status
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from datasets_registry import ColumnMapping, get_task, parse_mapping
from leaderboard.auth import CtxDep, PrincipalDep, SignedInDep
from leaderboard.charts import drift_figure
from leaderboard.errors import ERROR_RESPONSES
from leaderboard.loop.access import may_send_traffic
from leaderboard.loop.drift import (
    DEFAULT_ALPHA,
    DEFAULT_QUEUE,
    DriftOptions,
    check_drift,
    check_traffic_size,
    get_drift_check,
    list_drift_checks,
    read_traffic,
)
from leaderboard.loop.schemas import DriftCheckPublic, drift_check_public
from leaderboard.routes._files import received_file
from leaderboard.routes._page import render, signed_in

__all__ = ["pages_router", "router"]

TaskId = Annotated[str, Path(max_length=64, description="Task id, e.g. sentiment.")]
Number = Annotated[int, Path(ge=1, le=1_000_000, description="Drift check number.")]

router = APIRouter(tags=["drift"], responses=ERROR_RESPONSES)
pages_router = APIRouter(prefix="/ui", include_in_schema=False)

_PLAIN_SUFFIX = re.compile(r"\.(jsonl|ndjson|csv|tsv)")


@router.post(
    "/tasks/{task_id}/traffic",
    status_code=status.HTTP_201_CREATED,
    summary="Check production inputs for drift; queue the most shifted (owner or monitor)",
)
def send_traffic(
    task_id: TaskId,
    ctx: CtxDep,
    principal: SignedInDep,
    file: Annotated[UploadFile, File(description="JSONL, CSV or TSV: the task's inputs.")],
    mapping: Annotated[
        str, Form(alias="map", max_length=2000, description="field=column,...")
    ] = "",
    queue: Annotated[
        int, Form(ge=0, le=100, description="Most shifted inputs to queue when shifted.")
    ] = DEFAULT_QUEUE,
    alpha: Annotated[
        float, Form(gt=0, le=0.5, description="Shifted when the p-value is below it.")
    ] = DEFAULT_ALPHA,
) -> DriftCheckPublic:
    spec = get_task(ctx, task_id)
    may_send_traffic(principal, task_id)
    if file.size is not None:
        check_traffic_size(file.size)
    with received_file(file, "traffic", _PLAIN_SUFFIX) as path:
        inputs = read_traffic(path, spec, mapping=ColumnMapping(fields=parse_mapping([mapping])))
    check = check_drift(
        ctx,
        task_id,
        inputs,
        reporter_id=principal.user_id,
        options=DriftOptions(queue=queue, alpha=alpha),
    )
    return drift_check_public(check, full=principal.owns(task_id))


@router.get("/tasks/{task_id}/traffic", summary="The task's drift checks, newest first")
def list_checks(
    task_id: TaskId,
    ctx: CtxDep,
    principal: SignedInDep,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> list[DriftCheckPublic]:
    may_send_traffic(principal, task_id)
    full = principal.owns(task_id)
    return [drift_check_public(c, full=full) for c in list_drift_checks(ctx, task_id)[:limit]]


@router.get("/tasks/{task_id}/traffic/{number}", summary="One drift check")
def show_check(
    task_id: TaskId, number: Number, ctx: CtxDep, principal: SignedInDep
) -> DriftCheckPublic:
    may_send_traffic(principal, task_id)
    return drift_check_public(get_drift_check(ctx, task_id, number), full=principal.owns(task_id))


def _figure(check: DriftCheckPublic) -> dict[str, object]:
    return drift_figure(
        check.histogram.edges,
        check.histogram.traffic,
        check.histogram.reference,
        title=f"Drift check {check.number}: AUC {check.auc:.3f}, p = {check.p_value:.3g}",
    )


@pages_router.get("/tasks/{task_id}/drift", response_class=HTMLResponse)
async def drift_page(
    task_id: str,
    request: Request,
    ctx: CtxDep,
    principal: PrincipalDep,
    check: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
) -> HTMLResponse:
    spec = get_task(ctx, task_id)
    signed_in(principal)
    principal.require_owner(task_id, doing="see its drift checks")
    checks = await run_in_threadpool(list_drift_checks, ctx, task_id)
    shown = checks[0] if checks else None
    if check is not None:  # the one asked for, or the NotFound with its hint
        shown = await run_in_threadpool(get_drift_check, ctx, task_id, check)
    public = drift_check_public(shown, full=True) if shown is not None else None
    return render(
        request,
        "drift.html",
        principal,
        task=spec,
        checks=[drift_check_public(c, full=True) for c in checks],
        shown=public,
        charts={"drift": _figure(public)} if public is not None else {},
    )

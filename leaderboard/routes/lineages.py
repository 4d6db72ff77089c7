"""Lineages and per-case history: ``GET /lineages/ID``,
``GET /tasks/T/cases/UID/history``, and their pages (the lineage's scores over time, a
case's verdict by release)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse

from datasets_registry import get_task
from leaderboard.auth import CtxDep, PrincipalDep
from leaderboard.charts import Figure, lineage_figure
from leaderboard.errors import ERROR_RESPONSES
from leaderboard.lineages import lineage_public
from leaderboard.loop import case_history
from leaderboard.routes._page import render
from leaderboard.routes.tasks import TaskId, task_public
from leaderboard.schemas import CaseHistoryPublic, LineagePublic
from scoring import METRICS, WEIGHABLE_METRICS

__all__ = ["pages_router", "router"]

router = APIRouter(tags=["lineages"], responses=ERROR_RESPONSES)
pages_router = APIRouter(prefix="/ui", include_in_schema=False)

LineageId = Annotated[
    int, Path(ge=1, le=2**31 - 1, description="The submission id of any of its releases.")
]
CaseUid = Annotated[
    str,
    Path(min_length=1, max_length=256, description="The example's uid (it may hold a slash)."),
]
DatasetQuery = Annotated[
    str | None, Query(max_length=128, description="Only the case of this dataset.")
]


@router.get("/lineages/{submission_id}", summary="A model's releases, in order, with scores")
def lineage(submission_id: LineageId, ctx: CtxDep, principal: PrincipalDep) -> LineagePublic:
    return lineage_public(ctx, principal, submission_id)


@router.get(
    "/tasks/{task_id}/cases/{uid:path}/history",
    summary="Which release of each lineage first passed the example, and which lost it",
)
def history(
    task_id: TaskId,
    uid: CaseUid,
    ctx: CtxDep,
    principal: PrincipalDep,
    dataset: DatasetQuery = None,
) -> CaseHistoryPublic:
    return case_history(ctx, principal, task_id, uid, dataset=dataset)


def _shown_metrics(lineage: LineagePublic) -> list[str]:
    """The Dynascore's metrics that some release has a figure for."""
    return [
        name
        for name in WEIGHABLE_METRICS
        if any(r.metrics.get(name) is not None for r in lineage.releases)
    ]


def _figures(lineage: LineagePublic) -> dict[str, Figure]:
    """A line per metric over the releases scored on every scoring dataset."""
    figures = {}
    for name in _shown_metrics(lineage):
        metric = METRICS[name]
        points = [
            (r.created_at.isoformat(), f"release {r.number}: {r.name}", float(value))
            for r in lineage.releases
            if (value := r.metrics.get(name)) is not None
        ]
        if points:
            figures[name] = lineage_figure(metric.label, metric.unit, metric.direction, points)
    return figures


@pages_router.get("/lineages/{submission_id}", response_class=HTMLResponse)
def lineage_page(
    submission_id: LineageId, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> HTMLResponse:
    shown = lineage_public(ctx, principal, submission_id)
    return render(
        request,
        "lineage.html",
        principal,
        lineage=shown,
        task=task_public(ctx, shown.task),
        metrics=[METRICS[name] for name in _shown_metrics(shown)],
        charts=_figures(shown),
    )


@pages_router.get("/tasks/{task_id}/cases/{uid:path}", response_class=HTMLResponse)
def case_page(
    task_id: TaskId,
    uid: CaseUid,
    request: Request,
    ctx: CtxDep,
    principal: PrincipalDep,
    dataset: DatasetQuery = None,
) -> HTMLResponse:
    get_task(ctx, task_id)
    return render(
        request,
        "case.html",
        principal,
        case=case_history(ctx, principal, task_id, uid, dataset=dataset),
        task=task_public(ctx, task_id),
    )

"""Snapshots: the task owner freezes the public board; anyone lists, reads, downloads and
cites it (its page is the permalink)."""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import HTMLResponse, Response

from datasets_registry import get_task
from evalboard.core.context import Context
from evalboard.core.tables import Snapshot
from leaderboard.auth import CtxDep, PrincipalDep, SignedInDep
from leaderboard.errors import ERROR_RESPONSES
from leaderboard.routes._files import attachment
from leaderboard.routes._page import render
from leaderboard.routes.tasks import TaskId
from leaderboard.schemas import SnapshotCreate, SnapshotPublic, from_row
from leaderboard.snapshots import (
    bibtex,
    create_snapshot,
    get_snapshot,
    list_snapshots,
    snapshot_bytes,
    stored_board,
)

__all__ = ["pages_router", "router"]

router = APIRouter(prefix="/tasks/{task_id}", tags=["snapshots"], responses=ERROR_RESPONSES)
pages_router = APIRouter(prefix="/ui", include_in_schema=False)

Number = Annotated[int, Path(ge=1, le=2**31 - 1, description="The snapshot's number.")]


def _public(ctx: Context, request: Request, snapshot: Snapshot) -> SnapshotPublic:
    base = str(request.base_url).rstrip("/")
    path = f"/tasks/{snapshot.task_id}/snapshots/{snapshot.number}"
    url = f"{base}/ui{path}"
    return from_row(
        SnapshotPublic,
        snapshot,
        task=snapshot.task_id,
        url=url,
        csv_url=f"{base}{path}.csv",
        json_url=f"{base}{path}.json",
        citation=bibtex(snapshot, task_name=get_task(ctx, snapshot.task_id).name, url=url),
    )


@router.post("/snapshots", status_code=201, summary="Freeze the public board (task owner)")
def create(
    task_id: TaskId, body: SnapshotCreate, request: Request, ctx: CtxDep, principal: SignedInDep
) -> SnapshotPublic:
    get_task(ctx, task_id)
    return _public(ctx, request, create_snapshot(ctx, principal, task_id, title=body.title))


@router.get("/snapshots", summary="The task's snapshots, oldest first")
def list_(task_id: TaskId, request: Request, ctx: CtxDep) -> list[SnapshotPublic]:
    get_task(ctx, task_id)
    return [_public(ctx, request, s) for s in list_snapshots(ctx, task_id)]


def _download(ctx: Context, task_id: str, number: int, kind: str, media: str) -> Response:
    data = snapshot_bytes(ctx, get_snapshot(ctx, task_id, number), kind)
    return attachment(data, media, f"{task_id}-snapshot-{number}.{kind}")


# The downloads come before /snapshots/{number}, which would take "3.csv" as a bad number.
@router.get(
    "/snapshots/{number}.csv",
    summary="The frozen board as CSV (the bytes frozen, byte for byte)",
    response_class=Response,
    responses={200: {"content": {"text/csv": {"schema": {"type": "string"}}}}},
)
def download_csv(task_id: TaskId, number: Number, ctx: CtxDep) -> Response:
    return _download(ctx, task_id, number, "csv", "text/csv")


@router.get(
    "/snapshots/{number}.json",
    summary="The frozen board, datasets and provenance as JSON",
    response_class=Response,
    responses={200: {"content": {"application/json": {"schema": {"type": "object"}}}}},
)
def download_json(task_id: TaskId, number: Number, ctx: CtxDep) -> Response:
    return _download(ctx, task_id, number, "json", "application/json")


@router.get("/snapshots/{number}", summary="One snapshot: when, its hashes, its citation")
def show(task_id: TaskId, number: Number, request: Request, ctx: CtxDep) -> SnapshotPublic:
    return _public(ctx, request, get_snapshot(ctx, task_id, number))


@pages_router.get("/tasks/{task_id}/snapshots/{number}", response_class=HTMLResponse)
def snapshot_page(
    task_id: TaskId, number: Number, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> HTMLResponse:
    snapshot = get_snapshot(ctx, task_id, number)
    document = json.loads(snapshot_bytes(ctx, snapshot, "json"))
    return render(
        request,
        "snapshot.html",
        principal,
        snapshot=_public(ctx, request, snapshot),
        document=document,
        board=stored_board(document),
    )

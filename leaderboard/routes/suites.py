"""Regression suite versions: cut one (the task's owner and researchers), list them, and
download one as the file ``evalboard gate --suite`` reads (what the caller may see)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request, status
from fastapi.responses import Response

from evalboard.core.tables import SuiteVersion
from leaderboard.auth import CtxDep, PrincipalDep, SignedInDep
from leaderboard.errors import ERROR_RESPONSES
from leaderboard.loop import cut_suite, export_suite, list_suite_versions
from leaderboard.routes._files import attachment
from leaderboard.routes.tasks import TaskId
from leaderboard.schemas import SuiteVersionPublic

__all__ = ["router"]

router = APIRouter(prefix="/tasks/{task_id}/suites", tags=["suites"], responses=ERROR_RESPONSES)

Version = Annotated[int, Path(ge=1, le=2**31 - 1, description="The suite version's number.")]


def _public(request: Request, version: SuiteVersion) -> SuiteVersionPublic:
    base = str(request.base_url).rstrip("/")
    return SuiteVersionPublic(
        task=version.task_id,
        version=version.number,
        created_at=version.created_at,
        url=f"{base}/tasks/{version.task_id}/suites/{version.number}",
    )


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    summary="Cut the next suite version from what is stored now (owner, researchers)",
)
def create(
    task_id: TaskId, request: Request, ctx: CtxDep, principal: SignedInDep
) -> SuiteVersionPublic:
    return _public(request, cut_suite(ctx, principal, task_id))


@router.get("", summary="The task's suite versions, oldest first")
def list_(task_id: TaskId, request: Request, ctx: CtxDep) -> list[SuiteVersionPublic]:
    return [_public(request, v) for v in list_suite_versions(ctx, task_id)]


@router.get(
    "/{version}",
    summary="Download a suite version: the cases you may see, their gold and history",
    response_class=Response,
    responses={200: {"content": {"application/json": {"schema": {"type": "object"}}}}},
)
def download(task_id: TaskId, version: Version, ctx: CtxDep, principal: PrincipalDep) -> Response:
    data = export_suite(ctx, principal, task_id, version)
    return attachment(data, "application/json", f"{task_id}-suite-{version}.json")

"""Submissions: list, status (per dataset), cancel, re-run, the baseline mark, and the
per-example drill-down of a non-hidden dataset."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query

from datasets_registry import get_task
from leaderboard.auth import CtxDep, PrincipalDep, SignedInDep
from leaderboard.cards import CardUpdate, update_card
from leaderboard.drilldown import drilldown_page, visible_job
from leaderboard.errors import ERROR_RESPONSES
from leaderboard.routes.tasks import TaskId
from leaderboard.schemas import (
    BaselineUpdate,
    CardPublic,
    SubmissionPublic,
    SubmissionStatusPublic,
)
from leaderboard.submissions import (
    cancel,
    card_public,
    list_submissions,
    rerun,
    set_baseline,
    submission_status,
    visible_submission,
)

__all__ = ["router"]

router = APIRouter(tags=["submissions"], responses=ERROR_RESPONSES)

SubmissionId = Annotated[int, Path(ge=1, le=2**31 - 1, description="Submission id.")]


@router.get("/tasks/{task_id}/submissions", summary="A task's submissions, newest first")
def list_(task_id: TaskId, ctx: CtxDep, principal: PrincipalDep) -> list[SubmissionPublic]:
    get_task(ctx, task_id)
    return list_submissions(ctx, principal, task_id)


@router.get("/submissions/{submission_id}/card", summary="The model card")
def card(submission_id: SubmissionId, ctx: CtxDep, principal: PrincipalDep) -> CardPublic:
    return card_public(ctx, principal, visible_submission(ctx, principal, submission_id))


@router.patch(
    "/submissions/{submission_id}/card",
    summary="Edit the model card, publish or unpublish (its submitter)",
)
def edit_card(
    submission_id: SubmissionId, body: CardUpdate, ctx: CtxDep, principal: SignedInDep
) -> CardPublic:
    submission = visible_submission(ctx, principal, submission_id)
    return card_public(ctx, principal, update_card(ctx, principal, submission, body))


@router.get("/submissions/{submission_id}", summary="Status per dataset (logs: owner only)")
def status(
    submission_id: SubmissionId, ctx: CtxDep, principal: PrincipalDep
) -> SubmissionStatusPublic:
    return submission_status(ctx, principal, submission_id)


@router.post("/submissions/{submission_id}/cancel", summary="Cancel unfinished jobs")
def cancel_(
    submission_id: SubmissionId, ctx: CtxDep, principal: SignedInDep
) -> SubmissionStatusPublic:
    cancel(ctx, principal, submission_id)
    return submission_status(ctx, principal, submission_id)


@router.post("/submissions/{submission_id}/rerun", summary="Queue failed and cancelled jobs again")
def rerun_(
    submission_id: SubmissionId, ctx: CtxDep, principal: SignedInDep
) -> SubmissionStatusPublic:
    rerun(ctx, principal, submission_id)
    return submission_status(ctx, principal, submission_id)


@router.put("/submissions/{submission_id}/baseline", summary="Mark as baseline (task owner)")
def baseline(
    submission_id: SubmissionId, body: BaselineUpdate, ctx: CtxDep, principal: SignedInDep
) -> SubmissionStatusPublic:
    set_baseline(ctx, principal, submission_id, body.is_baseline)
    return submission_status(ctx, principal, submission_id)


@router.get(
    "/submissions/{submission_id}/examples/{dataset}",
    summary="Per-example predictions on a non-hidden dataset",
)
def examples(
    submission_id: SubmissionId,
    dataset: Annotated[str, Path(max_length=128)],
    ctx: CtxDep,
    principal: PrincipalDep,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    wrong_only: Annotated[bool, Query(description="Only examples the model got wrong.")] = False,
) -> list[dict[str, Any]]:
    submission = visible_submission(ctx, principal, submission_id)
    job = visible_job(principal, submission, dataset)
    page = drilldown_page(ctx, submission, job, offset=offset, limit=limit, wrong_only=wrong_only)
    return page.rows

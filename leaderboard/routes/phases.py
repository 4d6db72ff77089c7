"""Private phases (task owner: create, reveal; anyone: list) and predictions-only
submissions (a signed-in researcher): ``leaderboard/phases.py``, ``leaderboard/predictions.py``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from datasets_registry import get_task
from leaderboard.auth import CtxDep, PrincipalDep, SignedInDep
from leaderboard.errors import ERROR_RESPONSES
from leaderboard.phases import create_phase, list_phases, reveal_phase
from leaderboard.predictions import create_predictions
from leaderboard.routes.tasks import TaskId
from leaderboard.schemas import (
    PhaseCreate,
    PhasePublic,
    PhaseReveal,
    PredictionsCreate,
    SubmissionPublic,
)
from leaderboard.submissions import get_submission, submission_public

__all__ = ["router"]

router = APIRouter(prefix="/tasks/{task_id}", tags=["phases"], responses=ERROR_RESPONSES)

PhaseName = Annotated[str, Path(max_length=64, description="The phase's name.")]


@router.get("/phases", summary="The task's phases, oldest first")
def list_(task_id: TaskId, ctx: CtxDep, principal: PrincipalDep) -> list[PhasePublic]:
    get_task(ctx, task_id)
    return list_phases(ctx, principal, task_id)


@router.post("/phases", status_code=201, summary="Open a private phase of hidden sets (owner)")
def create(task_id: TaskId, body: PhaseCreate, ctx: CtxDep, principal: SignedInDep) -> PhasePublic:
    get_task(ctx, task_id)
    return create_phase(
        ctx,
        principal,
        task_id,
        name=body.name,
        datasets=body.datasets,
        submission_limit=body.submission_limit,
    )


@router.post("/phases/{name}/reveal", summary="Reveal (and close) a phase (owner)")
def reveal(
    task_id: TaskId, name: PhaseName, body: PhaseReveal, ctx: CtxDep, principal: SignedInDep
) -> PhasePublic:
    get_task(ctx, task_id)
    return reveal_phase(ctx, principal, task_id, name, public=body.public)


@router.post(
    "/predictions", status_code=201, summary="Submit predictions made elsewhere (signed in)"
)
def predictions(
    task_id: TaskId, body: PredictionsCreate, ctx: CtxDep, principal: SignedInDep
) -> SubmissionPublic:
    get_task(ctx, task_id)
    submission = create_predictions(ctx, principal, task_id, body)
    return submission_public(get_submission(ctx, submission.id), principal.name)

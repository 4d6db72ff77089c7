"""A task's collection rounds (read-only here; the collection loop adds its own routes)."""

from __future__ import annotations

from fastapi import APIRouter

from evalboard.core.states import RoundStatus
from evalboard.core.tables import Round
from leaderboard.auth import CtxDep
from leaderboard.errors import ERROR_RESPONSES
from leaderboard.loop.rounds import dataset_name, list_rounds
from leaderboard.routes.tasks import TaskId
from leaderboard.schemas import RoundPublic, from_row

__all__ = ["round_public", "router"]

router = APIRouter(prefix="/tasks/{task_id}/rounds", tags=["rounds"], responses=ERROR_RESPONSES)


def round_public(round_: Round) -> RoundPublic:
    """A round as the API shows it: its dataset by name (set once the round is closed)."""
    return from_row(
        RoundPublic,
        round_,
        status=RoundStatus(round_.status),
        target_submission_ids=[int(i) for i in round_.target_submission_ids],
        dataset=dataset_name(round_.number) if round_.dataset_id else None,
    )


@router.get("", summary="A task's rounds")
def list_(task_id: TaskId, ctx: CtxDep) -> list[RoundPublic]:
    return [round_public(r) for r in list_rounds(ctx, task_id)]

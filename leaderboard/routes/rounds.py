"""A task's collection rounds (read-only here; the collection loop adds its own routes)."""

from __future__ import annotations

from fastapi import APIRouter
from sqlalchemy import select

from datasets_registry import get_task
from evalboard.core.states import RoundStatus
from evalboard.core.tables import Dataset, Round
from leaderboard.auth import CtxDep
from leaderboard.errors import ERROR_RESPONSES
from leaderboard.routes.tasks import TaskId
from leaderboard.schemas import RoundPublic

__all__ = ["router"]

router = APIRouter(prefix="/tasks/{task_id}/rounds", tags=["rounds"], responses=ERROR_RESPONSES)


@router.get("", summary="A task's rounds")
def list_(task_id: TaskId, ctx: CtxDep) -> list[RoundPublic]:
    get_task(ctx, task_id)
    with ctx.db.session() as session:
        rounds = session.scalars(
            select(Round).where(Round.task_id == task_id).order_by(Round.number)
        ).all()
        names = dict(
            session.execute(
                select(Dataset.id, Dataset.name).where(Dataset.task_id == task_id)
            ).all()
        )
    return [
        RoundPublic(
            number=r.number,
            status=RoundStatus(r.status),
            target_submission_ids=[int(i) for i in r.target_submission_ids],
            dataset=names.get(r.dataset_id) if r.dataset_id else None,
            opened_at=r.opened_at,
            closed_at=r.closed_at,
        )
        for r in rounds
    ]

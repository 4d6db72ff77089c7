"""The leaderboard: ranked rows for any weights, as JSON or a CSV/JSON download."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from leaderboard.auth import CtxDep
from leaderboard.errors import ERROR_RESPONSES
from leaderboard.ranking import build_leaderboard, parse_weights, to_csv
from leaderboard.routes.tasks import TaskId
from leaderboard.schemas import LeaderboardPublic
from leaderboard.table import load_table

__all__ = ["router"]

router = APIRouter(prefix="/tasks/{task_id}", tags=["leaderboards"], responses=ERROR_RESPONSES)

Weights = Annotated[
    str | None,
    Query(
        max_length=500,
        description="METRIC:WEIGHT,... e.g. perf:4,throughput:1,memory:1. "
        "Default: the task owner's weights.",
    ),
]


@router.get("/leaderboard", summary="The ranking for the given weights")
def leaderboard(task_id: TaskId, ctx: CtxDep, weights: Weights = None) -> LeaderboardPublic:
    return build_leaderboard(ctx, load_table(ctx, task_id), parse_weights(weights))


@router.get(
    "/leaderboard.csv",
    summary="Download the whole table as CSV",
    response_class=Response,
    responses={
        200: {
            "content": {"text/csv": {"schema": {"type": "string"}}},
            "description": "One row per model.",
        }
    },
)
def leaderboard_csv(task_id: TaskId, ctx: CtxDep, weights: Weights = None) -> Response:
    board = build_leaderboard(ctx, load_table(ctx, task_id), parse_weights(weights))
    return Response(
        to_csv(board),
        media_type="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{task_id}-leaderboard.csv"'},
    )


@router.get(
    "/leaderboard.json",
    summary="Download the whole table as JSON",
    response_model=LeaderboardPublic,
)
def leaderboard_json(task_id: TaskId, ctx: CtxDep, weights: Weights = None) -> Response:
    board = build_leaderboard(ctx, load_table(ctx, task_id), parse_weights(weights))
    return Response(
        board.model_dump_json(indent=2),
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="{task_id}-leaderboard.json"'},
    )
